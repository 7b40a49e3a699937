"Tests of memlm.dynamic_skip (Gui et al. 2019): the layer, REINFORCE, the CRF and their use with memlm's core."
import itertools
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from memlm.dynamic_skip import (CRF, LAYERS, NERTagger, Reinforce, RingBuffer, SeqClassifier, SkipLSTM, SkipRecurrence,
                                classifier_reward, lm_reward, lstm_from, make_layer, ner_collate, ner_f1, ner_reward,
                                ner_vocabs, reinforce_loss, reverse_padded, reward_to_go, leave_one_out)

torch.set_num_threads(1)
T, B, I, H = 7, 3, 4, 5


def test_ring_buffer_reads_back_known_states():
    K = 4
    rb = RingBuffer(torch.zeros(K, B, H), torch.zeros(K, B, H))
    for t in range(1, 10):  # wraps around twice
        rb.push(torch.cat([torch.full((B, H), float(t)), torch.full((B, H), -float(t))], 1))
    for offsets in ([1, 2, 3], [4, 4, 1], [2, 3, 4]):
        hc = rb.read(torch.tensor(offsets) - 1)
        assert hc[:, 0].tolist() == [10. - o for o in offsets]
        assert hc[:, H].tolist() == [-(10. - o) for o in offsets]
    h, c = rb.state()
    assert h[:, 0, 0].tolist() == [9., 8., 7., 6.] and c[:, 0, 0].tolist() == [-9., -8., -7., -6.]


@pytest.mark.parametrize('impl', ['fused', 'autograd'])
@pytest.mark.parametrize('lam', [1.0, 0.5])
def test_k1_is_nn_lstm(impl, lam):
    torch.manual_seed(0)
    ref = nn.LSTM(I, H)
    x = torch.randn(T, B, I, requires_grad=True)
    y_ref, (h_ref, c_ref) = ref(x)
    (y_ref.sum() + c_ref.sum()).backward()
    gx, gw = x.grad.clone(), ref.weight_hh_l0.grad.clone()
    m = lstm_from(ref, K=1, lam=lam, impl=impl); x.grad = None
    y, (h, c) = m(x)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(h, h_ref, atol=1e-5, rtol=1e-4)
    (y.sum() + c.sum()).backward()
    torch.testing.assert_close(x.grad, gx, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(m.weight_hh.grad, gw, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize('lam', [1.0, 0.3])
def test_fused_bptt_matches_autograd(lam):
    torch.manual_seed(1)
    K = 4
    A = torch.randint(1, K + 1, (T, B))
    x = torch.randn(T, B, I, requires_grad=True)
    h0, c0 = torch.randn(K, B, H, requires_grad=True), torch.randn(K, B, H, requires_grad=True)
    res = {}
    for impl in ('fused', 'autograd'):
        torch.manual_seed(2); m = SkipLSTM(I, H, K=K, lam=lam, impl=impl)
        for p in (x, h0, c0): p.grad = None
        y, (hK, cK) = m(x, (h0, c0), actions=A)
        (y.cos().sum() + hK.square().sum() + cK.sum()).backward()
        res[impl] = [y, hK, cK, x.grad, h0.grad, c0.grad, m.weight_hh.grad, m.weight_ih.grad]
    for a, b in zip(*res.values()): torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_gradcheck_double():
    x, w = torch.randn(5, 2, 8, dtype=torch.double, requires_grad=True), torch.randn(8, 2, dtype=torch.double, requires_grad=True)
    h, c = torch.randn(3, 2, 2, dtype=torch.double, requires_grad=True), torch.randn(3, 2, 2, dtype=torch.double, requires_grad=True)
    A = torch.randint(0, 3, (5, 2))
    assert torch.autograd.gradcheck(lambda *a: SkipRecurrence.apply(*a, 0.7, lambda t, hp: A[t])[:3], (x, w, h, c))


@pytest.mark.parametrize('mode,kw', [('dynamic', {}), ('attention', {}), ('fixed', {'skip': 3})])
def test_shapes_and_state_carry(mode, kw):
    m = SkipLSTM(I, H, K=4, lam=0.5, mode=mode, **kw)
    y, st = m(torch.randn(T, B, I))
    assert y.shape == (T, B, H) and st[0].shape == (m.K, B, H) and st[1].shape == (m.K, B, H)
    assert torch.equal(st[0][0], y[-1])
    y2, _ = m(torch.randn(2, B, I), st)
    assert y2.shape == (2, B, H)


def test_fixed_skip_reads_t_minus_k():
    "With lambda=1 and skip k, step t continues from step t-k: chains t, t+k, ... are independent."
    torch.manual_seed(3)
    m = SkipLSTM(I, H, mode='fixed', skip=3, lam=1.0)
    x = torch.randn(9, 1, I)
    y, _ = m(x)
    x2 = x.clone(); x2[1] += 1.0   # changes chain 1, 4, 7 only
    y2, _ = m(x2)
    changed = (y - y2).abs().sum((1, 2)) > 0
    assert changed.tolist() == [False, True, False, False, True, False, False, True, False]


def test_policy_gets_gradient_only_from_reinforce():
    torch.manual_seed(4)
    m, head = SkipLSTM(I, H, K=3), nn.Linear(H, 2)
    y, _ = m(torch.randn(T, B, I))
    F.cross_entropy(head(y[-1]), torch.tensor([0, 1, 1])).backward()
    assert all(p.grad is None for p in m.policy.parameters())
    assert m.weight_hh.grad.abs().sum() > 0
    m.zero_grad(set_to_none=True)
    reinforce_loss(m.trace, torch.randn(B)).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 and torch.isfinite(p.grad).all() for p in m.policy.parameters())
    assert all(p.grad is None for p in (m.weight_ih, m.weight_hh, m.bias_ih, m.bias_hh))


def test_attention_policy_trained_by_backprop():
    m, head = SkipLSTM(I, H, K=3, mode='attention'), nn.Linear(H, 2)
    y, _ = m(torch.randn(T, B, I))
    F.cross_entropy(head(y[-1]), torch.tensor([0, 1, 1])).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in m.policy.parameters())


def test_greedy_eval_is_deterministic_and_training_samples():
    torch.manual_seed(5)
    m = SkipLSTM(I, H, K=4).eval()
    x = torch.randn(20, 8, I)
    with torch.no_grad():
        y1, _ = m(x); a1 = m.trace.actions.clone()
        y2, _ = m(x); a2 = m.trace.actions.clone()
    assert torch.equal(a1, a2) and torch.equal(y1, y2)
    assert torch.equal(a1, m.trace.probs.argmax(-1) + 1)
    m.train()
    with torch.no_grad():
        m(x); b1 = m.trace.actions.clone(); m(x); b2 = m.trace.actions.clone()
    assert not torch.equal(b1, b2)


def test_fresh_sequences_never_skip_before_start():
    m = SkipLSTM(I, H, K=6)
    with torch.no_grad(): m(torch.randn(T, 16, I))
    assert (m.trace.actions <= torch.arange(1, T + 1)[:, None]).all()


def test_reinforce_helpers():
    assert reward_to_go(torch.tensor([1., 2., 3.])).tolist() == [6., 5., 3.]
    assert leave_one_out(torch.tensor([[1., 2., 3.]])).tolist() == [[2.5, 2., 1.5]]
    tr = SkipLSTM(I, H, K=3)
    tr(torch.randn(T, B, I))
    mask = torch.ones(T, B, dtype=torch.bool); mask[5:, 0] = False
    for baseline in ('loo', 'none', torch.zeros(T, B)):
        loss = reinforce_loss(tr.trace, torch.randn(T, B), mask, baseline)
        assert loss.dim() == 0 and torch.isfinite(loss)
    with pytest.raises(ValueError, match='baseline'): reinforce_loss(tr.trace, torch.randn(B), baseline='bogus')


def test_reinforce_learns_a_bandit():
    torch.manual_seed(6)
    m = SkipLSTM(2, 3, K=3); opt = torch.optim.Adam(m.policy.parameters(), lr=0.1)
    x, st = torch.randn(1, 32, 2), m.init_state(32)
    for _ in range(50):
        m(x, st); loss = reinforce_loss(m.trace, (m.trace.actions[0] == 3).float())
        opt.zero_grad(); loss.backward(); opt.step()
    m.eval(); m(x, st)
    assert (m.trace.actions == 3).all()


def test_crf_against_brute_force():
    torch.manual_seed(7)
    L = 3
    crf = CRF(L)
    for p in crf.parameters(): nn.init.normal_(p)
    em, lengths = torch.randn(4, 3, L), torch.tensor([4, 3, 1])
    mask = torch.arange(4)[:, None] < lengths
    logZ, best = crf.log_partition(em, mask), crf.decode(em, mask)
    for b in range(3):
        n = int(lengths[b])
        seqs = [torch.tensor(s) for s in itertools.product(range(L), repeat=n)]
        scores = torch.stack([crf.score(em[:n, b:b + 1], s[:, None], torch.ones(n, 1, dtype=torch.bool))[0] for s in seqs])
        torch.testing.assert_close(logZ[b], torch.logsumexp(scores, 0))
        assert best[b] == seqs[int(scores.argmax())].tolist()
    probs = torch.exp(-crf.nll(em[:2, :1], torch.tensor([[0], [1]]), torch.ones(2, 1, dtype=torch.bool)))
    assert 0 < probs.item() < 1


def test_reverse_padded():
    x = torch.tensor([[1, 5], [2, 6], [3, 0]])
    assert reverse_padded(x, torch.tensor([3, 2])).tolist() == [[3, 6], [2, 5], [1, 0]]


def test_layers_in_lstmlm_and_fit_with_reinforce():
    "A skip layer replaces LSTMLM's 2nd layer, and memlm.train.fit trains it with the REINFORCE hook."
    from memlm.models import LSTMLM, LSTMLMConfig
    from memlm.train import fit, TrainConfig, LMTask
    torch.manual_seed(8)
    V = 30
    data = torch.randint(V, (2000,))
    for kind in LAYERS:
        layer = None if kind == 'lstm' else make_layer(kind, 16, 16, K=3)
        model = LSTMLM(LSTMLMConfig(vocab_size=V, nhid=16, dropout=0.1), layers=[None, layer])
        out = model(data[:10, None].expand(10, 4))
        assert out.logp.shape == (10, 4, V)
        rl = Reinforce(lm_reward)
        hist = fit(model, LMTask(data[:1500], data[1500:]), TrainConfig(lr=1., clip=5., epochs=1, batch_size=4, bptt=10,
                   max_steps_per_epoch=5, progress=False), extra_loss=rl if kind == 'dynamic' else None)
        assert len(hist) == 1 and hist[0]['val_ppl'] < 1e4
        if kind == 'dynamic': assert set(rl.last) == {'reward', 'entropy', 'mean_skip'}


def test_classifier_fit_and_policy_update():
    from memlm.data import number_prediction
    from memlm.train import fit, TrainConfig, BatchTask
    torch.manual_seed(9)
    x, y = number_prediction(200, 11, seed=0)
    model = SeqClassifier(10, 10, lambda i: make_layer('dynamic', i, 16, K=10, lam=0.5))
    before = [p.detach().clone() for p in model.rnn.policy.parameters()]
    fit(model, BatchTask((x, y), (x[:50], y[:50])), TrainConfig(optimizer='adam', lr=1e-2, weight_decay=0., clip=None, epochs=1,
        batch_size=50, monitor='acc', monitor_mode='max', progress=False), extra_loss=Reinforce(classifier_reward))
    assert any(not torch.equal(a, b) for a, b in zip(before, model.rnn.policy.parameters()))
    assert classifier_reward((x[:5], y[:5]), model(x[:5])).shape == (5,)


def test_ner_tagger_learns_a_toy_task():
    torch.manual_seed(10)
    sents = [dict(words=['Paris', 'is', 'nice'], tags=['S-LOC', 'O', 'O']), dict(words=['I', 'met', 'John', 'Smith'], tags=['O', 'O', 'B-PER', 'E-PER']),
             dict(words=['Berlin'], tags=['S-LOC'])] * 4
    v = ner_vocabs(sents, min_count=1)
    for kind in ('lstm', 'dynamic'):
        model = NERTagger(len(v.words), len(v.chars), len(v.tags), lambda i: make_layer(kind, i, 16, K=3), word_dim=16, char_dim=8,
                          char_filters=8, dropout=0.0)
        opt = torch.optim.Adam(model.parameters(), lr=0.05)
        rl = Reinforce(ner_reward)
        for _ in range(30):
            b = ner_collate(sents, v); out = model(b)
            loss = out.nll.mean() + rl(model, b, out)
            opt.zero_grad(); loss.backward(); opt.step()
        assert ner_f1(model, sents, v)['f1'] == 100.0


def test_reinforce_hook_ema_baseline_and_eval_mode():
    torch.manual_seed(11)
    model = SeqClassifier(10, 10, lambda i: make_layer('dynamic', i, 8, K=4))
    x, y = torch.randint(10, (6, 5)), torch.randint(10, (6,))
    rl = Reinforce(classifier_reward, baseline='ema', ema=0.5)
    for _ in range(2):
        loss = rl(model, (x, y), model(x))
        assert loss.dim() == 0 and torch.isfinite(loss)
    assert rl.b.shape == (5, 1)
    model.eval()
    assert rl(model, (x, y), model(x)).item() == 0.   # no policy loss outside training


def test_patience_stops_fit():
    "Early stopping is the core's `TrainConfig.patience` (the notebook's number-prediction and NER runs use it)."
    from memlm.train import fit, TrainConfig, BatchTask
    x, y = torch.randint(10, (40, 5)), torch.randint(10, (40,))
    model = SeqClassifier(10, 10, lambda i: make_layer('dynamic', i, 4, K=2))
    task = BatchTask((x, y), None, evaluate=lambda m: dict(acc=0.0))   # never improves after epoch 1
    hist = fit(model, task, TrainConfig(optimizer='adam', lr=1e-3, epochs=10, batch_size=20, monitor='acc', monitor_mode='max',
               progress=False, patience=2), extra_loss=Reinforce(classifier_reward))
    assert len(hist) == 3 and hist[-1]['stopped'] == 'patience'
