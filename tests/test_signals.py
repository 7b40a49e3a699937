"""The direction of every learning signal and of the optimiser's wiring: one step of each on a toy whose right answer is known.
A flipped sign or a dropped term trains something else while every shape and finite-difference test still passes."""
import pytest
import torch
import memlm.span_buffer as SB
from memlm.dynamic_skip import SkipTrace, reinforce_loss
from memlm.models import AWDLSTMConfig
from memlm.phrase_induction import alignment_loss
from memlm.train import TrainConfig, make_optimizer


@pytest.mark.parametrize('reward', [1., -1.], ids=['positive', 'negative'])
def test_span_buffer_reward_moves_the_gate_its_way(monkeypatch, reward):
    "One SGD step on the span buffer's reward term (`snb_extra_loss`) raises the gate's λ for a positive reward, lowers it for a negative."
    torch.manual_seed(0)
    model = SB.SpanBufferLM(AWDLSTMConfig.tiny(29, nlayers=2, emsize=6, nhid=10), SB.SNBConfig(span_len=3, buffer_size=9, attn_size=5, eta=1.))
    x, y = torch.randint(0, 29, (12, 3)), torch.randint(0, 29, (12, 3))
    monkeypatch.setattr(SB, 'intrinsic_reward', lambda lq, lp, cfg: torch.full_like(lq, reward))   # the reward's sign, fixed
    for form in SB.REWARD_FORMS:
        model.snb = SB.SNBConfig(span_len=3, buffer_size=9, attn_size=5, eta=1., reward_form=form)
        model.train(); out = model(x)
        lam = lambda: torch.softmax(model.gate(model.aux.gate_in.detach()), -1)[..., 1][model.aux.has].mean()
        before = lam().item()
        opt = torch.optim.SGD(model.gate.parameters(), lr=0.5); opt.zero_grad()
        torch.manual_seed(1); SB.snb_extra_loss(model, (x, y), out).backward(); opt.step()
        after = lam().item()
        assert (after > before) == (reward > 0), (form, reward, before, after)


def test_reinforce_raises_the_probability_of_the_rewarded_action():
    "Dynamic skip's REINFORCE loss, one step on a two-action policy: the action rewarded +1 gains, the one rewarded -1 loses."
    logits = torch.zeros(2, requires_grad=True)
    actions = torch.tensor([[0, 1, 0, 1]])                               # [T=1, B=4]
    logp_all = torch.log_softmax(logits, -1)
    trace = SkipTrace(actions=actions + 1, logp=logp_all[actions], entropy=-(logp_all.exp() * logp_all).sum().expand(1, 4),
                      probs=logp_all.exp().detach().expand(1, 4, 2))
    reward = torch.where(actions[0] == 0, 1., -1.)                       # [B]: one reward per sequence
    reinforce_loss(trace, reward, baseline='none', entropy_weight=0., normalize=False).backward()
    with torch.no_grad(): logits -= 0.5 * logits.grad
    p = torch.softmax(logits, -1)
    assert p[0] > 0.5 > p[1], p


def test_phrase_alignment_loss_falls_as_context_and_phrase_align():
    "Eq. 16: aligned context and phrase embeddings cost less than opposed ones, and a step on s lowers the loss."
    torch.manual_seed(0)
    c = torch.randn(8, 4)
    for n_neg in (0, 1):
        idx = (torch.arange(8)[:, None] + 1) % 8
        assert alignment_loss(c, 2 * c, n_neg, idx if n_neg else None) < alignment_loss(c, -2 * c, n_neg, idx if n_neg else None)
    s = torch.randn(8, 4, requires_grad=True)
    before = alignment_loss(c, s, 0); before.backward()
    with torch.no_grad(): after = alignment_loss(c, s - 0.5 * s.grad, 0)
    assert after < before


@pytest.mark.parametrize('optimizer', ['sgd', 'adam'])
def test_make_optimizer_passes_lr_and_weight_decay(optimizer):
    "A parameter with zero gradient moves only by weight decay: SGD shrinks it by lr·wd·p, Adam (L2 in its gradient) by about lr; without decay it stays."
    for wd in (0.1, 0.):
        p = torch.nn.Parameter(torch.tensor([2., -3.]))
        opt = make_optimizer([p], TrainConfig(optimizer=optimizer, lr=0.01, weight_decay=wd))
        p.grad = torch.zeros(2); opt.step()
        want = torch.tensor([2., -3.]) * (1 - 0.01 * wd) if optimizer == 'sgd' else torch.tensor([2. - 0.01, -3. + 0.01]) if wd else torch.tensor([2., -3.])
        torch.testing.assert_close(p.detach(), want, rtol=0, atol=1e-6)
