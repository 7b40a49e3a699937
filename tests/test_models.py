"""Tests of memlm.models (owner: models engineer). Tiny sizes: the whole file runs in a few seconds on CPU."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from memlm.models import (AWDLSTM, AWDLSTMConfig, FusedLSTMLM, LMOutput, LockedDropout, LSTMLM, LSTMLMConfig,
                          MoSHead, WeightDropLSTM, build_model, detach, dropout_mask, embedded_dropout,
                          pack_cudnn_weights, throughput_ratio, train_tokens_per_second, weight_dropout)

V, T, B = 40, 6, 3


def lstm_params(i, h): return 4 * h * (i + h) + 8 * h  # W, U and the two biases PyTorch keeps


def n_params(m): return sum(p.numel() for p in m.parameters())


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def xs(): return torch.randint(V, (T, B))


# ---------------------------------------------------------------- parameter counts (meta device: no memory)
def test_awd_ptb_has_24_2M_parameters():
    with torch.device('meta'): m = AWDLSTM(AWDLSTMConfig.awd_ptb())
    expected = 10000 * 400 + 10000 + lstm_params(400, 1150) + lstm_params(1150, 1150) + lstm_params(1150, 400)
    assert n_params(m) == expected == 24_221_600
    assert abs(expected - 24.2e6) <= 0.1e6
    cfg = m.cfg
    assert (cfg.nlayers, cfg.nhid, cfg.emsize, cfg.tied, cfg.vocab_size) == (3, 1150, 400, True, 10000)


@pytest.mark.parametrize('preset,paper_m', [('awd_wt2', 33), ('mos_ptb', 22), ('mos_wt2', 35)])
def test_paper_presets_match_paper_sizes(preset, paper_m):
    cfg = getattr(AWDLSTMConfig, preset)()
    with torch.device('meta'): m = AWDLSTM(cfg)
    s = cfg.layer_sizes
    expected = cfg.vocab_size * cfg.emsize + cfg.vocab_size + sum(lstm_params(a, b) for a, b in zip(s, s[1:]))
    if cfg.n_experts:
        K, E = cfg.n_experts, cfg.emsize
        expected += s[-1] * K + s[-1] * K * E + K * E
    assert n_params(m) == expected
    assert abs(expected / 1e6 - paper_m) < 0.6


def test_presets_values():
    c = AWDLSTMConfig.awd_ptb()
    assert (c.dropout, c.dropouth, c.dropouti, c.dropoute, c.wdrop) == (0.4, 0.25, 0.4, 0.1, 0.5)
    c = AWDLSTMConfig.awd_wt2()
    assert (c.vocab_size, c.dropouth, c.dropouti) == (33278, 0.2, 0.65)
    c = AWDLSTMConfig.mos_ptb()
    assert c.layer_sizes == [280, 960, 960, 620] and (c.n_experts, c.dropoutl, c.dropouth) == (15, 0.29, 0.225)
    for preset, (h, p) in {'small': (200, 0.0), 'medium': (650, 0.5), 'large': (1500, 0.65)}.items():
        c = getattr(LSTMLMConfig, preset)()
        assert (c.nhid, c.nlayers, c.dropout) == (h, 2, p)
    assert AWDLSTMConfig.awd_ptb(vocab_size=123).vocab_size == 123


# ---------------------------------------------------------------- dropouts
def test_dropout_mask_statistics():
    m = dropout_mask(torch.empty(0), (200_000,), 0.4)
    assert abs((m == 0).float().mean().item() - 0.4) < 0.01
    assert abs(m.mean().item() - 1) < 0.01
    assert dropout_mask(torch.empty(0), (5,), 0.0).eq(1).all()
    with pytest.raises(ValueError): dropout_mask(torch.empty(0), (5,), 1.0)


def test_locked_dropout_mask_constant_over_time_and_identity_in_eval():
    ld = LockedDropout(0.5)
    y = ld(torch.ones(T, 32, 10))
    assert torch.equal(y, y[:1].expand_as(y))
    assert not torch.equal(y[0, 0], y[0, 1])
    x = torch.randn(T, B, 10)
    assert ld.eval()(x) is x


def test_embedded_dropout_drops_rows_and_matches_matrix_masking(xs):
    emb = nn.Embedding(V, 5)
    torch.manual_seed(3); a = embedded_dropout(emb, xs, 0.5)
    torch.manual_seed(3); z = dropout_mask(emb.weight, (V, 1), 0.5)
    b = F.embedding(xs, emb.weight * z)
    torch.testing.assert_close(a, b)
    dropped = (a == 0).all(-1)
    for v in xs.unique(): assert dropped[xs == v].unique().numel() == 1  # whole word types
    torch.testing.assert_close(embedded_dropout(emb, xs, 0.5, training=False), emb(xs))


# ---------------------------------------------------------------- weight dropout
def _copy_to_lstm(wd):
    ref = nn.LSTM(wd.input_size, wd.hidden_size)
    with torch.no_grad():
        for a, b in zip(ref.parameters(), wd.parameters()): a.copy_(b)
    return ref


def test_weight_drop_eval_equals_plain_lstm():
    wd = WeightDropLSTM(4, 5, 0.5).eval()
    ref, x = _copy_to_lstm(wd), torch.randn(T, B, 4)
    (y, (h, c)), (yr, (hr, cr)) = wd(x), ref(x)
    torch.testing.assert_close(y, yr); torch.testing.assert_close(h, hr); torch.testing.assert_close(c, cr)


def test_weight_drop_masks_differ_between_training_forwards_and_are_shared_within_one():
    wd, x = WeightDropLSTM(4, 5, 0.5), torch.randn(T, B, 4)
    assert not torch.equal(wd(x)[0], wd(x)[0])
    torch.manual_seed(11); y, _ = wd(x)
    torch.manual_seed(11); U_m = weight_dropout(wd.weight_hh_raw, 0.5)
    ref = _copy_to_lstm(wd)
    with torch.no_grad(): ref.weight_hh_l0.copy_(U_m)
    torch.testing.assert_close(y, ref(x)[0])  # one mask for all T steps


def test_weight_drop_gradients_reach_raw_weights():
    wd, x = WeightDropLSTM(4, 5, 0.5), torch.randn(T, B, 4)
    torch.manual_seed(2); y, _ = wd(x)
    torch.manual_seed(2); U_m = weight_dropout(wd.weight_hh_raw, 0.5).detach()
    y.pow(2).sum().backward()
    g = wd.weight_hh_raw.grad
    assert g is not None and g[U_m != 0].abs().gt(0).any() and g[U_m == 0].abs().max() == 0
    assert all(p.grad is not None for p in wd.parameters())
    assert [n for n, _ in wd.named_parameters()] == ['weight_ih', 'weight_hh_raw', 'bias_ih', 'bias_hh']


def test_weight_drop_backward_in_eval_mode():  # dynamic evaluation back-propagates through an eval-mode model
    wd = WeightDropLSTM(4, 5, 0.5).eval()
    wd(torch.randn(T, B, 4))[0].sum().backward()
    assert wd.weight_hh_raw.grad is not None


def test_pack_cudnn_weights_is_one_contiguous_chunk():
    ws = [torch.randn(8, 3, requires_grad=True), torch.randn(8, 2, requires_grad=True), torch.randn(8)]
    pk = pack_cudnn_weights(ws)
    assert all(torch.equal(p, w) for p, w in zip(pk, ws))
    assert [p.data_ptr() - pk[0].data_ptr() for p in pk] == [0, 96, 160]
    sum(p.sum() for p in pk).backward()
    assert torch.equal(ws[0].grad, torch.ones(8, 3))


# ---------------------------------------------------------------- AWD-LSTM / MoS
CONFIGS = [AWDLSTMConfig.tiny(V), AWDLSTMConfig.tiny(V, n_experts=3, nhidlast=24, dropoutl=0.2),
           AWDLSTMConfig.tiny(V, tied=False)]


@pytest.mark.parametrize('cfg', CONFIGS, ids=['awd', 'mos', 'untied'])
def test_awd_contract_shapes_and_modes(cfg, xs):
    model = AWDLSTM(cfg)
    out = model(xs)
    assert isinstance(out, LMOutput) and out.logp.shape == (T, B, V)
    sizes = cfg.layer_sizes[1:]
    assert [o.shape for o in out.raw_outputs] == [o.shape for o in out.outputs] == [(T, B, s) for s in sizes]
    assert [h.shape for h, _ in out.hidden] == [(1, B, s) for s in sizes]
    assert [h.shape for h, _ in model.init_hidden(B)] == [(1, B, s) for s in sizes]
    torch.testing.assert_close(out.logp.exp().sum(-1), torch.ones(T, B))
    assert not torch.equal(model(xs).logp, out.logp)  # training is stochastic
    model.eval()
    with torch.no_grad():
        e1, e2 = model(xs), model(xs, model.init_hidden(B))
        torch.testing.assert_close(e1.logp, e2.logp)  # deterministic; None == zero state
        assert not torch.allclose(model(xs, e1.hidden).logp, e1.logp)
        assert torch.equal(e1.raw_outputs[-1], e1.outputs[-1])


@pytest.mark.parametrize('cfg', CONFIGS, ids=['awd', 'mos', 'untied'])
def test_awd_gradients_reach_every_parameter(cfg, xs):
    model = AWDLSTM(cfg)
    out = model(xs)
    loss = F.nll_loss(out.logp.flatten(0, 1), torch.randint(V, (T * B,)))
    loss = loss + out.outputs[-1].pow(2).mean() + (out.raw_outputs[-1][1:] - out.raw_outputs[-1][:-1]).pow(2).mean()
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or p.grad.abs().sum() == 0]
    assert missing == []


def test_awd_tied_and_init(xs):
    model = AWDLSTM(AWDLSTMConfig.tiny(V))
    assert model.decoder.weight is model.encoder.weight
    assert model.encoder.weight.abs().max() <= 0.1 and model.decoder.bias.abs().max() == 0
    with pytest.raises(ValueError, match='tied weights'): AWDLSTM(AWDLSTMConfig.tiny(V, nhidlast=24))


def test_awd_detached_state_loop(xs):
    model = AWDLSTM(AWDLSTMConfig.tiny(V))
    hidden = model.init_hidden(B)
    for _ in range(3):
        out = model(xs, hidden)
        F.nll_loss(out.logp.flatten(0, 1), xs.flatten()).backward()
        hidden = detach(out.hidden)
    assert not any(h.requires_grad for pair in hidden for h in pair)


def test_awd_runs_under_functional_call(xs):
    model = AWDLSTM(AWDLSTMConfig.tiny(V, n_experts=2, nhidlast=16)).eval()
    params = {k: v.clone() for k, v in model.named_parameters()}
    with torch.no_grad():
        torch.testing.assert_close(torch.func.functional_call(model, params, (xs,)).logp, model(xs).logp)
        params['rnns.1.weight_hh_raw'] = params['rnns.1.weight_hh_raw'] * 0
        assert not torch.allclose(torch.func.functional_call(model, params, (xs,)).logp, model(xs).logp)


def test_mos_one_expert_is_plain_softmax_and_normalised():
    g = torch.randn(T, B, 12)
    with torch.no_grad():
        m1 = MoSHead(12, 6, V, 1).eval()
        torch.testing.assert_close(m1(g), F.log_softmax(m1.decoder(torch.tanh(m1.latent(g))), -1))
        m = MoSHead(12, 6, V, 5, dropoutl=0.3)
        lp = m(g)
        torch.testing.assert_close(lp.exp().sum(-1), torch.ones(T, B))
        m.decoder.weight.mul_(1e4)
        big = m(g * 1e4)
        assert torch.isfinite(big).all() and not big.isnan().any()


# ---------------------------------------------------------------- regularized LSTM LM and custom layers
def test_lstmlm_equals_fused_two_layer_lstm(xs):
    lm = LSTMLM(LSTMLMConfig.tiny(V)).eval()
    fused = nn.LSTM(32, 32, num_layers=2)
    with torch.no_grad():
        for l in range(2):
            for n in ('weight_ih', 'weight_hh', 'bias_ih', 'bias_hh'):
                getattr(fused, f'{n}_l{l}').copy_(getattr(lm.rnns[l], f'{n}_l0'))
        torch.testing.assert_close(lm(xs).logp, F.log_softmax(lm.decoder(fused(lm.encoder(xs))[0]), -1))
    assert all(p.abs().max() <= 0.1 for p in lm.parameters())
    lm.train()
    assert not torch.equal(lm(xs).logp, lm(xs).logp)


class DictStateLayer(nn.Module):
    "A custom layer following the interface, with a dict state."
    def __init__(self, i, h): super().__init__(); self.lstm = nn.LSTM(i, h)

    def forward(self, x, state=None):
        state = state or {'hc': None, 'n': 0}
        y, hc = self.lstm(x, state['hc'])
        return y, {'hc': hc, 'n': state['n'] + len(x)}


def test_lstmlm_replaces_one_layer(xs):
    custom = DictStateLayer(32, 32)
    w0 = custom.lstm.weight_hh_l0.detach().clone()
    lm = LSTMLM(LSTMLMConfig.tiny(V), layers=[None, custom])
    assert isinstance(lm.rnns[0], nn.LSTM) and lm.rnns[1] is custom
    assert torch.equal(custom.lstm.weight_hh_l0, w0)  # custom layers keep their own init
    hidden = lm.init_hidden(B)
    assert hidden[1] is None and hidden[0][0].shape == (1, B, 32)
    for _ in range(2):
        out = lm(xs, hidden)
        F.nll_loss(out.logp.flatten(0, 1), xs.flatten()).backward()
        hidden = detach(out.hidden)
    assert hidden[1]['n'] == 2 * T and custom.lstm.weight_hh_l0.grad is not None
    gru = LSTMLM(LSTMLMConfig.tiny(V), layers=[None, nn.GRU(32, 32)])
    assert gru(xs, gru.init_hidden(B)).hidden[1].shape == (1, B, 32)
    awd = AWDLSTM(AWDLSTMConfig.tiny(V), layers=[None, nn.GRU(32, 32), None])
    assert awd(xs).logp.shape == (T, B, V)
    with pytest.raises(ValueError, match='expected 2 layers'): LSTMLM(LSTMLMConfig.tiny(V), layers=[None])


def test_build_model_and_detach():
    assert isinstance(build_model(AWDLSTMConfig.tiny(V)), AWDLSTM)
    assert isinstance(build_model(LSTMLMConfig.tiny(V)), LSTMLM)
    with pytest.raises(TypeError): build_model({'nhid': 3})
    w = torch.ones(2, requires_grad=True)
    d = detach([(w * 2, w), {'a': w * 3, 'k': 1}, None])
    assert isinstance(d[0], tuple) and d[1]['k'] == 1 and d[2] is None
    assert not d[0][0].requires_grad and not d[1]['a'].requires_grad


# ---------------------------------------------------------------- throughput helpers
def test_fused_baseline_has_the_same_sizes_and_helpers_run():
    cfg = AWDLSTMConfig.tiny(V)
    base = FusedLSTMLM.from_config(cfg)
    assert n_params(base) == n_params(AWDLSTM(cfg))
    assert [r.hidden_size for r in base.rnns] == cfg.layer_sizes[1:]
    res = throughput_ratio(AWDLSTM(cfg), base, V, bsz=2, bptt=4, steps=2, warmup=1)
    assert res['ratio'] > 0 and math.isfinite(res['model_tps'])
    assert train_tokens_per_second(base, V, bsz=2, bptt=4, steps=2, warmup=1) > 0
