"""memlm.evaluate: stateful perplexity, article resets, dynamic evaluation (Krause et al.) and its update hook."""
import dataclasses, math
import pytest, torch, torch.nn as nn, torch.nn.functional as F

from memlm.data import synthetic_corpus
from memlm.models import AWDLSTM, AWDLSTMConfig, LSTMLM, LSTMLMConfig, LMOutput
from memlm.evaluate import (evaluate, lm_windows, gradient_stats, dynamic_evaluate, DynEvalConfig, dyneval_state,
                            rms_update, sgd_update)

torch.set_num_threads(1)


def _lm(seed=0, **kw):
    torch.manual_seed(seed)
    return LSTMLM(LSTMLMConfig.tiny(12, **{**dict(nlayers=1, nhid=64, dropout=0., init_range=0.5), **kw}))


def _weights(m): return [p.detach().clone() for p in m.parameters()]


def test_perplexity_is_token_weighted_and_stateful():
    lm, s = _lm(), torch.randint(0, 12, (401,), generator=torch.Generator().manual_seed(0))
    r = evaluate(lm, s, batch_size=1, bptt=9)
    assert r['tokens'] == 400 and math.isclose(r['ppl'], math.exp(r['loss']))
    # the state is carried across windows: the window length does not matter
    assert math.isclose(evaluate(lm, s, batch_size=1, bptt=400)['loss'], r['loss'], rel_tol=1e-5)
    # by hand, one forward over the whole stream
    with torch.no_grad(): lp = lm.eval()(s[:-1, None]).logp
    assert math.isclose(-lp[torch.arange(400), 0, s[1:]].double().mean().item(), r['loss'], rel_tol=1e-5)
    assert evaluate(lm, s, batch_size=7, bptt=9)['tokens'] == 7 * (401 // 7 - 1)


def test_article_resets_need_batch_1_and_score_every_token():
    c = synthetic_corpus(n_train=500, n_valid=600, n_test=100, vocab_size=32, article_len=100)
    lm = LSTMLM(LSTMLMConfig.tiny(32))
    starts = c.articles['valid']
    windows = list(lm_windows(c.valid, 1, 30, starts))
    assert sum(y.numel() for _, y, _ in windows) == len(c.valid) - 1
    assert [int(x[0, 0]) for x, _, reset in windows if reset] == [int(c.valid[0])] + [int(c.valid[s - 1]) for s in starts[1:]]
    r = evaluate(lm, c.valid, batch_size=1, bptt=30, articles=starts)
    assert r['tokens'] == len(c.valid) - 1
    # each article scored alone from a zero state (inputs from the <eos> before it) adds up to the same total
    cuts = [0] + [int(a) - 1 for a in starts[1:]] + [len(c.valid) - 1]
    alone = [evaluate(lm, c.valid[a:b + 1], batch_size=1, bptt=30) for a, b in zip(cuts[:-1], cuts[1:])]
    assert sum(x['tokens'] for x in alone) == r['tokens']
    assert math.isclose(sum(x['loss'] * x['tokens'] for x in alone), r['loss'] * r['tokens'], rel_tol=1e-6)
    assert not math.isclose(evaluate(lm, c.valid, batch_size=1, bptt=30)['loss'], r['loss'], rel_tol=1e-6)
    with pytest.raises(ValueError, match='needs batch_size=1'): evaluate(lm, c.valid, batch_size=4, articles=starts)


def test_dynamic_eval_with_zero_lr_equals_static_eval():
    torch.manual_seed(0)
    awd = AWDLSTM(AWDLSTMConfig.tiny(24, nlayers=2))
    c = synthetic_corpus(n_train=2000, n_valid=300, n_test=100, vocab_size=24)
    w0 = _weights(awd)
    for cfg in (DynEvalConfig(lr=0., stats_batch_size=10, max_stats_batches=5), DynEvalConfig(method='sgd', lr=0.)):
        r = dynamic_evaluate(awd, c.valid, cfg, train=c.train)
        assert math.isclose(r['loss'], evaluate(awd, c.valid, batch_size=1, bptt=5)['loss'], rel_tol=1e-6)
        assert r['tokens'] == len(c.valid) - 1
    assert all(torch.equal(a, b) for a, b in zip(_weights(awd), w0))
    assert awd.training  # the mode is restored


def test_dynamic_eval_adapts_to_repeated_text():
    lm, train = _lm(), torch.randint(0, 12, (2000,), generator=torch.Generator().manual_seed(0))
    rep = torch.randint(0, 12, (40,), generator=torch.Generator().manual_seed(1)).repeat(8)
    static = evaluate(lm, rep, batch_size=1, bptt=5)['loss']
    stats = gradient_stats(lm, train, batch_size=20, bptt=5, max_batches=10)
    rms = dynamic_evaluate(lm, rep, DynEvalConfig(lr=3e-3, eps=1e-3), stats=stats)['loss']
    sgd = dynamic_evaluate(lm, rep, DynEvalConfig(method='sgd', lr=1.))['loss']
    assert rms < static - 0.5 and sgd < static - 0.5, (static, rms, sgd)
    # without resetting, the adapted weights stay (and score the text better afterwards)
    dynamic_evaluate(lm, rep, DynEvalConfig(method='sgd', lr=1., reset_weights=False))
    assert evaluate(lm, rep, batch_size=1, bptt=5)['loss'] < static - 0.5


class _Toy2(nn.Module):
    "An LM with two scalar parameters: log p(. | x) = log_softmax(a E[x] + b c)."
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.a, self.b = nn.Parameter(torch.tensor(0.7)), nn.Parameter(torch.tensor(-0.3))
        self.register_buffer('E', torch.randn(5, 5, generator=g)); self.register_buffer('c', torch.randn(5, generator=g))
    def logp(self, th, x): return F.log_softmax(th[0] * self.E[x] + th[1] * self.c, -1)
    def forward(self, x, hidden=None):
        lp = self.logp((self.a, self.b), x)
        return LMOutput(lp, None, [lp], [lp])


def _nll(lp, y): return F.nll_loss(lp.reshape(-1, lp.size(-1)), y.reshape(-1))


@pytest.mark.parametrize('old', [False, True])
def test_rms_update_matches_the_formula_on_a_two_parameter_model(old):
    toy = _Toy2()
    tr = torch.randint(0, 5, (61,), generator=torch.Generator().manual_seed(1))
    ev = torch.randint(0, 5, (16,), generator=torch.Generator().manual_seed(2))
    cfg = DynEvalConfig(lr=0.05, lam=0.3, eps=1e-3, old_scaling=old)
    stats = gradient_stats(toy, tr, batch_size=4, bptt=5)
    # statistics by hand: a [15, 4] stream in windows of 5, 5, 4
    src, g2, nb = tr[:60].view(4, 15).t(), torch.zeros(2), 0
    th0 = torch.tensor([0.7, -0.3])
    for i in range(0, 14, 5):
        n = min(5, 14 - i)
        t = th0.clone().requires_grad_()
        g2 += torch.autograd.grad(_nll(toy.logp(t, src[i:i + n]), src[i + 1:i + 1 + n]), t)[0] ** 2; nb += 1
    MS = (g2 / nb).sqrt()
    assert stats['n_batches'] == nb == 3 and torch.allclose(torch.stack(stats['MS']), MS, atol=1e-7)
    lr, lam, eps = (0.05 / math.sqrt(3), 0.3 / 2, 1e-3 / math.sqrt(3)) if old else (0.05, 0.3, 1e-3)
    dec = (MS / MS.mean()).clamp(max=1 / lam)
    th, nll, n = th0.clone(), 0., 0
    for i in range(0, 15, 5):  # segments of 5 tokens, batch 1
        t = th.clone().requires_grad_()
        loss = _nll(toy.logp(t, ev[i:i + 5, None]), ev[i + 1:i + 6, None])
        g, = torch.autograd.grad(loss, t)
        nll, n = nll + loss.item() * 5, n + 5
        th = th - lr * g / (MS + eps) + lam * dec * (th0 - th)
    r = dynamic_evaluate(toy, ev, cfg, stats=stats, update=None)
    assert math.isclose(r['loss'], nll / n, rel_tol=1e-6)
    dynamic_evaluate(toy, ev, dataclasses.replace(cfg, reset_weights=False), stats=stats)
    assert torch.allclose(torch.stack([toy.a, toy.b]).detach(), th, atol=1e-6)


def test_decay_rates_are_clipped_and_old_scaling_converts():
    p = [torch.zeros(1), torch.zeros(1)]
    st = dyneval_state(DynEvalConfig(lam=0.8), p, dict(MS=[torch.tensor([0.1]), torch.tensor([1.9])], n_batches=4))
    assert torch.allclose(torch.cat(st['decrate']), torch.tensor([0.1, 1.25]))  # 1.9 clipped at 1/λ
    st = dyneval_state(DynEvalConfig.paper(), p, dict(MS=[torch.tensor([0.1]), torch.tensor([1.9])], n_batches=4))
    assert (st['lr'], st['lam'], st['eps']) == pytest.approx((0.002 / 2, 0.02 / 2, 0.001 / 2))
    assert DynEvalConfig().lr == 5e-5 and DynEvalConfig().lam == 0.002 and DynEvalConfig().eps == 2e-5


def test_update_hook_receives_params_grads_and_state():
    lm = _lm()
    rep = torch.randint(0, 12, (40,), generator=torch.Generator().manual_seed(1)).repeat(2)
    calls = []
    def hook(model, params, grads, state):
        assert model is lm and len(params) == len(grads) == len(state['theta0'])
        assert all(g.shape == p.shape for p, g in zip(params, grads))
        state.setdefault('mine', 0); state['mine'] += 1  # a hook may keep its own state
        calls.append((state['step'], state['mine'], float(state['loss'])))
        sgd_update(model, params, grads, state)
    hooked = dynamic_evaluate(lm, rep, DynEvalConfig(method='sgd', lr=1.), update=hook)
    plain = dynamic_evaluate(lm, rep, DynEvalConfig(method='sgd', lr=1.))
    assert math.isclose(hooked['loss'], plain['loss'], rel_tol=1e-9)
    assert [c[:2] for c in calls] == [(i, i + 1) for i in range(16)]
    with pytest.raises(ValueError, match='needs gradient statistics'): dynamic_evaluate(lm, rep)
