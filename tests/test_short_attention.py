"""Tests of memlm.short_attention (Daniluk et al. 2017): equations, causality, windows across BPTT
boundaries, article resets, parameter matching, CBT scoring."""
import pytest
import torch
import torch.nn.functional as F

from memlm.models import detach
from memlm.short_attention import (KINDS, ShortAttnConfig, ShortAttentionLM, count_params, match_hidden_size,
                                   matched_configs, AttentionProfile)

torch.set_num_threads(1)
V = 23
VARIANTS = [dict(kind='lstm'), dict(kind='attention', window=4), dict(kind='kv', window=4),
            dict(kind='kvp', window=4), dict(kind='kvp', window=1), dict(kind='ngram', ngram=2),
            dict(kind='ngram', ngram=3), dict(kind='ngram', ngram=4), dict(kind='ngram', ngram=5)]
IDS = [f"{v['kind']}-{v.get('window', v.get('ngram', ''))}" for v in VARIANTS]


def make(seed=0, nlayers=1, **kw):
    torch.manual_seed(seed)
    cfg = ShortAttnConfig(vocab_size=V, emb_size=5, hidden_size=12, nlayers=nlayers, **kw)
    return ShortAttentionLM(cfg).double().eval()


def reference(m, x, reset=None):
    "Token-by-token, column-by-column evaluation of the paper's equations with the model's weights."
    c, (T, B) = m.cfg, x.shape
    d, L = c.part_size, c.window
    out = torch.zeros(T, B, V, dtype=torch.float64)
    for b in range(B):
        st = [None] * c.nlayers
        hist = []                                                   # top-layer outputs of the current article
        for t in range(T):
            if st[0] is None or (reset is not None and reset[t, b]):
                st = [(torch.zeros(1, 1, c.hidden_size, dtype=torch.float64),) * 2 for _ in range(c.nlayers)]
                hist = []
            inp = m.encoder(x[t:t + 1, b:b + 1])
            for l, rnn in enumerate(m.rnns): inp, st[l] = rnn(inp, st[l])
            h = inp[0, 0]
            if c.kind == 'lstm': hs = h
            elif c.kind == 'ngram':
                P = c.ngram - 1
                seq = [h] + hist[::-1]                              # lag 0, 1, ...
                cat = [seq[i][i * d:(i + 1) * d] if i < len(seq) else torch.zeros(d, dtype=h.dtype) for i in range(P)]
                hs = torch.tanh(m.head.W_N.weight @ torch.cat(cat))
            else:
                a = m.head
                key = {'attention': slice(0, d), 'kv': slice(0, d), 'kvp': slice(0, d)}[c.kind]
                val = {'attention': slice(0, d), 'kv': slice(d, 2 * d), 'kvp': slice(d, 2 * d)}[c.kind]
                base = {'attention': slice(0, d), 'kv': slice(d, 2 * d), 'kvp': slice(2 * d, 3 * d)}[c.kind]
                past = hist[-L:]
                if past:
                    Y = torch.stack([p[key] for p in past])         # [n, d]
                    M = torch.tanh(Y @ a.W_Y.weight.T + a.W_h.weight @ h[key])
                    alpha = torch.softmax(M @ a.w.weight[0], 0)
                    r = alpha @ torch.stack([p[val] for p in past])
                else: r = torch.zeros(d, dtype=h.dtype)
                hs = torch.tanh(a.W_r.weight @ r + a.W_x.weight @ h[base])
            out[t, b] = F.log_softmax(m.decoder(hs), -1)
            hist.append(h)
    return out


def run_chunks(m, x, sizes, reset=None):
    "Run `m` over consecutive windows of `x`, carrying (and detaching) the state."
    hidden, outs, a = None, [], 0
    for s in sizes:
        o = m(x[a:a + s], hidden, reset=None if reset is None else reset[a:a + s])
        outs.append(o.logp); hidden = detach(o.hidden); a += s
    return torch.cat(outs)


@pytest.mark.parametrize('kw', VARIANTS, ids=IDS)
def test_matches_reference_equations(kw):
    m = make(**kw)
    x = torch.randint(0, V, (9, 3))
    reset = torch.zeros(9, 3, dtype=torch.bool); reset[5, 1] = True; reset[2, 2] = reset[3, 2] = True
    with torch.no_grad():
        torch.testing.assert_close(m(x).logp, reference(m, x))
        torch.testing.assert_close(m(x, reset=reset).logp, reference(m, x, reset))


@pytest.mark.parametrize('kw', VARIANTS, ids=IDS)
def test_carried_memory_equals_one_long_window(kw):
    "The invariant: windows of any size (shorter than L too) with the carried state = one long window."
    m = make(nlayers=2, **kw)
    x = torch.randint(0, V, (13, 2))
    reset = torch.zeros(13, 2, dtype=torch.bool); reset[7, 0] = True; reset[4, 1] = True
    with torch.no_grad():
        full = m(x, reset=reset).logp
        for sizes in ([13], [5, 8], [1, 2, 3, 7], [6, 1, 6]):
            torch.testing.assert_close(run_chunks(m, x, sizes, reset), full)


@pytest.mark.parametrize('kw', VARIANTS, ids=IDS)
def test_causal(kw):
    "Changing token t0 leaves every earlier prediction unchanged (and changes the one at t0)."
    m = make(**kw)
    x = torch.randint(0, V, (10, 2))
    for t0 in (0, 4, 9):
        y = x.clone(); y[t0] = (y[t0] + 1) % V
        with torch.no_grad(): a, b = run_chunks(m, x, [6, 4]), run_chunks(m, y, [6, 4])
        torch.testing.assert_close(a[:t0], b[:t0], rtol=0, atol=0)
        assert (a[t0] - b[t0]).abs().max() > 1e-9


@pytest.mark.parametrize('kind', ['attention', 'kv', 'kvp'])
def test_attention_weights_only_on_real_past(kind):
    L = 4
    m = make(kind=kind, window=L); m.record_attn = True
    x = torch.randint(0, V, (8, 2))
    reset = torch.zeros(8, 2, dtype=torch.bool); reset[5, 1] = True
    with torch.no_grad(): m(x, reset=reset)
    a, _ = m.last_attn                                               # [T, B, L], slot j = position t-L+j
    n_past = torch.tensor([[min(t, L), min(t if t < 5 else t - 5, L)] for t in range(8)])
    for t in range(8):
        for b in range(2):
            n = n_past[t, b].item()
            assert a[t, b, :L - n].abs().sum() == 0                # nothing before the sequence / article start
            if n: torch.testing.assert_close(a[t, b, L - n:].sum(), torch.tensor(1., dtype=a.dtype))
            else: assert a[t, b].sum() == 0                         # no past at all: r_t = 0


def test_no_nan_gradients_at_article_start():
    m = make(kind='kvp', window=3).train()
    x = torch.randint(0, V, (4, 2))
    reset = torch.ones(4, 2, dtype=torch.bool)                      # every token starts an article: no past ever
    m(x, reset=reset).logp.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)


def test_reset_hidden_equals_reset_mask():
    m = make(kind='kv', window=3)
    x = torch.randint(0, V, (10, 3))
    with torch.no_grad():
        h = m(x[:6]).hidden
        a = m(x[6:], m.reset_hidden(h, torch.tensor([False, True, False]))).logp
        reset = torch.zeros(4, 3, dtype=torch.bool); reset[0, 1] = True
        torch.testing.assert_close(a, m(x[6:], h, reset=reset).logp)
        torch.testing.assert_close(a[:, 1], m(x[6:, 1:2]).logp[:, 0])  # a reset column = a fresh start


def test_gradient_reaches_across_window_until_detached():
    m = make(kind='attention', window=4).train()
    x = torch.randint(0, V, (6, 1))
    o1 = m(x[:3]); o2 = m(x[3:], o1.hidden)
    o2.logp.sum().backward()
    assert m.encoder.weight.grad[x[:3, 0]].abs().sum() > 0          # through the carried memory
    assert detach(o1.hidden)[1].requires_grad is False


@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize('V_, w, k', [(10000, 200, 200), (33278, 400, 400), (1000, 64, 96)])
def test_match_hidden_size_within_one_percent(kind, V_, w, k):
    target = count_params(ShortAttnConfig(vocab_size=V_, emb_size=w, hidden_size=k, kind='lstm'))
    H = match_hidden_size(kind, target, V_, w, window=10, ngram=4)
    c = ShortAttnConfig(vocab_size=V_, emb_size=w, hidden_size=H, kind=kind, window=10, ngram=4)
    assert abs(count_params(c) - target) <= 0.01 * target
    assert H % c.parts == 0


def test_count_params_matches_module():
    for c in matched_configs(ShortAttnConfig(vocab_size=50, emb_size=8, hidden_size=12, kind='lstm', window=3), tol=0.2).values():
        assert count_params(c) == sum(p.numel() for p in ShortAttentionLM(c).parameters())


def test_attention_profile_counts_full_windows_only():
    m = make(kind='kvp', window=3)
    x = torch.randint(0, V, (7, 2))
    with AttentionProfile(m) as prof, torch.no_grad(): m(x)
    assert prof.n == 2 * (7 - 3)                                     # positions with a full window of real past
    torch.testing.assert_close(prof.mean.sum(), torch.tensor(1., dtype=prof.mean.dtype))


def test_lstm_kind_is_the_shared_lstmlm():
    "kind='lstm' is memlm.models.LSTMLM (1 layer, no dropout): same parameter count, same outputs."
    from memlm.models import LSTMLM, LSTMLMConfig
    m = make(kind='lstm')
    ref = LSTMLM(LSTMLMConfig(vocab_size=V, nhid=12, nlayers=1, emsize=5, dropout=0., init_range=0.1)).double().eval()
    assert sum(p.numel() for p in ref.parameters()) == sum(p.numel() for p in m.parameters())
    ref.encoder.load_state_dict(m.encoder.state_dict()); ref.rnns[0].load_state_dict(m.rnns[0].state_dict())
    ref.head.decoder.load_state_dict(m.decoder.state_dict())
    x = torch.randint(0, V, (7, 3))
    with torch.no_grad(): torch.testing.assert_close(m(x).logp, ref(x).logp)


CBT = """1 the cat sat on the mat .
2 the dog ran to the hat .
3 XXXXX sat on the mat .\tcat\t\tcat|dog|hat

1 a dog ran .
2 the hat sat on a dog .
3 the XXXXX ran to a mat .\tdog\t\tcat|dog|mat

1 the cat ran .
2 XXXXX the mat .\ton\t\ton|to|cat
"""


def test_cbt_scores_and_accuracy(tmp_path):
    from memlm.data import read_cbt, EOS
    from memlm.short_attention import cbt_lm_corpus, cbt_scores, cbt_accuracy
    f = tmp_path/'cbt_P_test_2500ex.txt'; f.write_text(CBT)
    qs = read_cbt(f)
    cc = cbt_lm_corpus({'train': [f], 'valid': [f], 'test': [f]})
    assert cc.articles['valid'].tolist() == [0, 23, 44]              # 8+8+7, then 5+8+8 tokens
    torch.manual_seed(1)
    m = ShortAttentionLM(ShortAttnConfig(vocab_size=len(cc.vocab), emb_size=6, hidden_size=10, kind='kv', window=4))
    s3, s1 = cbt_scores(m, cc.vocab, qs, bsz=3), cbt_scores(m, cc.vocab, qs, bsz=1)
    torch.testing.assert_close(s3, s1)                               # left padding + reset is invisible
    for qi, q in enumerate(qs):                                      # = the filled-in story scored from scratch
        ctx = [w for s in q['context'] for w in (*s.split(), EOS)]
        for ci, c in enumerate(q['candidates']):
            ids = cc.vocab.encode(ctx + q['query'].replace('XXXXX', c).split() + [EOS])
            with torch.no_grad(): lp = m(ids[:-1, None]).logp[:, 0]
            torch.testing.assert_close(s3[qi, ci], lp[len(ctx) - 1:].gather(-1, ids[len(ctx):, None]).sum())
    acc = cbt_accuracy(m, cc.vocab, {'P': qs, 'V': qs[:1]})
    pred = s3.argmax(1).tolist()
    assert acc['P'] == pytest.approx(100 * sum(q['candidates'][p] == q['answer'] for q, p in zip(qs, pred)) / 3)
    assert set(acc) == {'P', 'V'}


def test_article_task_marks_resets_and_trains():
    from memlm.train import TrainConfig, fit
    from memlm.short_attention import ArticleLMTask
    data = torch.arange(40) % V
    task = ArticleLMTask(data, data[:20], train_articles=torch.tensor([0, 7, 15, 30]), valid_articles=torch.tensor([0, 9]))
    m = ShortAttentionLM(ShortAttnConfig(vocab_size=V, emb_size=5, hidden_size=12, kind='kvp', window=3))
    cfg = TrainConfig(optimizer='adam', lr=1e-3, weight_decay=0., clip=5., epochs=1, batch_size=1, bptt=4,
                      eval_batch_size=1, progress=False)
    task.setup(m, cfg)
    flags = torch.cat([r[:, 0] for _, _, r in task.batches(0, torch.Generator())])
    assert flags.nonzero()[:, 0].tolist() == [6, 14, 29]             # the input before each article's first token
    hist = fit(m, task, cfg)
    assert len(hist) == 1 and hist[0]['val_ppl'] > 0
