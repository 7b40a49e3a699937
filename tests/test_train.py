"""memlm.train: a SIGKILLed-and-resumed run ends bitwise identical to an uninterrupted one; NaN guard; iid tasks."""
import os, signal, subprocess, sys, textwrap
from pathlib import Path
import pytest, torch

from memlm.train import TrainConfig, fit, load_checkpoint, NonFiniteLossError

from memlm.tasks import LMTask, BatchTask

ROOT = Path(__file__).resolve().parent.parent
torch.set_num_threads(1)

# One training job: a small AWD-LSTM with every source of randomness on (dropout of all kinds, variable
# BPTT, partial shuffling), 4 epochs. argv: ckpt_dir optimizer ckpt_every kill_epoch kill_batch.
# The callback SIGKILLs the process after step `kill_batch` of (0-based) epoch `kill_epoch`.
JOB = textwrap.dedent('''
    import os, signal, sys, torch
    torch.set_num_threads(1)
    from memlm.corpora import synthetic_corpus
    from memlm.models import AWDLSTM, AWDLSTMConfig
    from memlm.train import TrainConfig, fit
    from memlm.tasks import LMTask
    d, opt, every, kill_epoch, kill_batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    corpus = synthetic_corpus(n_train=3000, n_valid=300, n_test=100, vocab_size=24)
    torch.manual_seed(0)
    model = AWDLSTM(AWDLSTMConfig.tiny(24, nlayers=2))
    cfg = TrainConfig(optimizer=opt, lr=10. if opt == 'sgd' else 3e-3, epochs=4, batch_size=8, bptt=12, variable_bptt=True,
                      partial_shuffle=True, alpha=2., beta=1., finetune=opt == 'sgd', nonmono=10, ckpt_every=every or None,
                      eval_batch_size=4, load_best=False, progress=False)
    def killer(info):
        if info.epoch == kill_epoch and info.batch_idx == kill_batch: os.kill(os.getpid(), signal.SIGKILL)
    fit(model, LMTask(corpus.train, corpus.valid), cfg, ckpt_dir=d, callbacks=[killer])
    torch.save(model.state_dict(), os.path.join(d, 'final.pt'))
''')


def _job(d, opt, every=0, kill=(-1, -1)):
    env = dict(os.environ, OMP_NUM_THREADS='1', PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, '-c', JOB, str(d), opt, str(every), *map(str, kill)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _tensors(x, prefix=''):
    "Flatten the tensors of a nested checkpoint into {path: tensor}."
    if isinstance(x, torch.Tensor): return {prefix: x}
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, (list, tuple)) else []
    return {k: v for key, val in items for k, v in _tensors(val, f'{prefix}/{key}').items()}


def _untimed(history):
    return [{k: v for k, v in h.items() if k not in ('time_s', 'items_per_s')} for h in history]


def _assert_same_run(a: Path, b: Path):
    fa, fb = (torch.load(p/'final.pt', weights_only=True) for p in (a, b))
    assert fa.keys() == fb.keys()
    for k in fa: assert torch.equal(fa[k], fb[k]), f'final weights differ in {k}'
    la, lb = load_checkpoint(a/'last.pt'), load_checkpoint(b/'last.pt')
    for part in ('model', 'optimizer', 'averaged', 'rng'):
        ta, tb = _tensors(la[part]), _tensors(lb[part])
        assert ta.keys() == tb.keys(), part
        for k in ta: assert torch.equal(ta[k], tb[k]), f'{part}{k} differs'
    assert _untimed(la['state']['history']) == _untimed(lb['state']['history'])
    assert la['state']['step'] == lb['state']['step']


@pytest.mark.parametrize('opt,every,kill,resume_batch', [
    ('sgd', 0, (2, 10), 0),      # killed mid-epoch 3: resumes from the end-of-epoch-2 checkpoint (averaged SGD on)
    ('adam', 7, (2, 12), None),  # checkpoints every 7 steps: resumes mid-epoch 3 (Adam state, carried LM state)
])
def test_killed_and_resumed_run_is_bitwise_identical(tmp_path, opt, every, kill, resume_batch):
    ref, run = tmp_path/'ref', tmp_path/'run'
    r = _job(ref, opt, every); assert r.returncode == 0, r.stderr
    r = _job(run, opt, every, kill)
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr)
    assert not (run/'final.pt').exists()
    st = load_checkpoint(run/'last.pt')['state']
    assert st['epoch'] == 2 and (st['batch'] == resume_batch if resume_batch is not None else 0 < st['batch'] < kill[1])
    r = _job(run, opt, every); assert r.returncode == 0, r.stderr
    _assert_same_run(ref, run)


def _tiny_lm_task():
    from memlm.corpora import synthetic_corpus
    c = synthetic_corpus(n_train=2000, n_valid=200, n_test=100, vocab_size=24)
    return LMTask(c.train, c.valid)


def test_blow_up_stops_with_message_and_keeps_last_good_checkpoint(tmp_path):
    "An lr that jumps by 1e30 after epoch 1 (lr_decay=1e-30) makes the model blow up in epoch 2."
    from memlm.models import LSTMLM, LSTMLMConfig
    cfg = TrainConfig(lr=1., clip=None, epochs=3, batch_size=8, bptt=10, lr_decay=1e-30, lr_decay_start=1,
                      eval_batch_size=4, progress=False)
    torch.manual_seed(0); model = LSTMLM(LSTMLMConfig.tiny(24))
    saved = []
    with pytest.raises(NonFiniteLossError, match=r'is (nan|inf) at epoch 2, step \d+; the last good checkpoint is kept at .*last.pt'):
        fit(model, _tiny_lm_task(), cfg, ckpt_dir=tmp_path,
            callbacks=[lambda i: saved.append(load_checkpoint(tmp_path/'last.pt')) if i.epoch == 1 and i.batch_idx == 1 else None])
    good, after = saved[0], load_checkpoint(tmp_path/'last.pt')
    assert after['state']['epoch'] == 1 and good['state']['epoch'] == 1
    for k, v in good['model'].items(): assert torch.equal(v, after['model'][k]) and torch.isfinite(v).all()
    assert all(torch.isfinite(v).all() for v in load_checkpoint(tmp_path/'best.pt')['model'].values())


class _Boom(Exception): pass


def test_iid_task_resumes_mid_epoch_exactly(tmp_path):
    "A BatchTask run interrupted mid-epoch (exception in a callback) resumes from its mid-epoch checkpoint."
    g = torch.Generator().manual_seed(0)
    x = torch.randn(120, 4, generator=g); y = (x.sum(1) > 0).long()
    task = lambda: BatchTask((x[:100], y[:100]), (x[100:], y[100:]))
    cfg = TrainConfig(optimizer='adam', lr=1e-2, epochs=3, batch_size=10, ckpt_every=4, progress=False)
    def model():
        torch.manual_seed(0); return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 2))
    m_ref = model(); h_ref = fit(m_ref, task(), cfg, ckpt_dir=tmp_path/'ref')
    def boom(info):
        if info.epoch == 1 and info.batch_idx == 6: raise _Boom
    with pytest.raises(_Boom): fit(model(), task(), cfg, ckpt_dir=tmp_path/'run', callbacks=[boom])
    assert load_checkpoint(tmp_path/'run'/'last.pt')['state']['batch'] == 2  # global step 12 = epoch 2, batch 2
    m = model(); h = fit(m, task(), cfg, ckpt_dir=tmp_path/'run')
    assert _untimed(h) == _untimed(h_ref)
    for a, b in zip(m.state_dict().values(), m_ref.state_dict().values()): assert torch.equal(a, b)
    assert h[-1]['val_acc'] > 0.8


def test_extra_loss_and_callbacks_see_every_step():
    from memlm.models import LSTMLM, LSTMLMConfig
    extra = lambda model, batch, out: 0. * out.logp.sum() + 1.          # a constant: the same gradients, a loss 1.0 higher
    cfg = TrainConfig(lr=1., epochs=2, batch_size=8, bptt=10, max_steps_per_epoch=4, eval_batch_size=4, progress=False)
    runs = []
    for kw in ({'extra_loss': extra}, {}):
        seen = []; torch.manual_seed(0)
        fit(LSTMLM(LSTMLMConfig.tiny(24)), _tiny_lm_task(), cfg, callbacks=[lambda i: seen.append((i.epoch, i.batch_idx, float(i.loss)))], **kw)
        runs.append(seen)
    assert [(e, b) for e, b, _ in runs[0]] == [(0, 1), (0, 2), (0, 3), (0, 4), (1, 1), (1, 2), (1, 3), (1, 4)]
    for (_, _, with_), (_, _, without) in zip(*runs):       # every step's loss is the task's plus the extra term, step by step
        assert abs(with_ - (without + 1.)) < 1e-5, (with_, without)


def test_callback_stop_ends_run_after_validation(tmp_path):
    from memlm.models import LSTMLM, LSTMLMConfig
    def stop(info): info.stop = info.step == 3
    cfg = TrainConfig(lr=1., epochs=5, batch_size=8, bptt=10, eval_batch_size=4, progress=False)
    torch.manual_seed(0)
    h = fit(LSTMLM(LSTMLMConfig.tiny(24)), _tiny_lm_task(), cfg, callbacks=[stop], ckpt_dir=tmp_path)
    assert len(h) == 1 and h[0]['stopped'] == 'callback' and 'val_ppl' in h[0]
    assert fit(LSTMLM(LSTMLMConfig.tiny(24)), _tiny_lm_task(), cfg, ckpt_dir=tmp_path) == h  # a finished run stays finished


def test_patience_counter_survives_resume(tmp_path):
    "A run interrupted between epochs stops at the same epoch as an uninterrupted one (the count is checkpointed)."
    from memlm.corpora import number_prediction
    scores = [0.5, 0.6, 0.55, 0.58, 0.59, 0.9, 0.95]
    def run(epochs, ckpt, start=0):
        it = iter(scores[start:])
        task = BatchTask(number_prediction(60, 6, 0, skips=1, n_symbols=5), evaluate=lambda m: {'acc': next(it)})
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Embedding(5, 4), torch.nn.Flatten(), torch.nn.Linear(24, 5))
        cfg = TrainConfig(optimizer='adam', lr=1e-3, epochs=epochs, batch_size=20, monitor='acc', monitor_mode='max',
                          patience=3, progress=False)
        return fit(model, task, cfg, ckpt_dir=ckpt)
    full = run(7, tmp_path/'a')
    assert [h['epoch'] for h in full] == [1, 2, 3, 4, 5] and full[-1]['stopped'] == 'patience'
    run(3, tmp_path/'b'); resumed = run(7, tmp_path/'b', start=3)
    assert resumed[-1]['epoch'] == 5 and resumed[-1]['stopped'] == 'patience'


@pytest.mark.parametrize('variable', [False, True], ids=['fixed-bptt', 'variable-bptt'])
def test_fit_sees_every_training_target_once_per_epoch(variable):
    "Each epoch's windows tile the batchified training stream: every target position once, none twice, none skipped."
    from memlm.data import batchify
    from memlm.models import LSTMLM, LSTMLMConfig
    N, bs = 403, 4
    train = torch.arange(N)                                              # every token its own id: a target names its position
    seen = []
    def extra(model, batch, out): seen.append(batch[1].flatten().tolist()); return out.logp.sum() * 0.
    cfg = TrainConfig(lr=0.1, epochs=2, batch_size=bs, bptt=7, variable_bptt=variable, eval_batch_size=4, progress=False)
    torch.manual_seed(0)
    fit(LSTMLM(LSTMLMConfig.tiny(N)), LMTask(train, train[:50]), cfg, extra_loss=extra)
    want = sorted(batchify(train, bs)[1:].flatten().tolist())
    got = sorted(t for b in seen for t in b)
    assert got == sorted(want + want), (len(got), len(want))          # two epochs, each target once per epoch
