"""memlm.experiment across processes: a plan killed mid-run and executed again ends with the records of an uninterrupted one."""
import json, os, signal, subprocess, sys, textwrap, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A plan of two toy runs (3 epochs, a pause in each epoch); argv: root. Executed as a separate process so it can be killed.
JOB = textwrap.dedent('''
    import sys, torch
    torch.set_num_threads(1)
    from memlm.experiment import Spec, ToyConfig, toy_regression
    from memlm.plan import Plan
    specs = [Spec(toy_regression, ToyConfig(epochs=3, sleep_s=0.4), seed=s, name='toy') for s in (0, 1)]
    res = Plan('demo', 'cpu', {'t': specs}, root=sys.argv[1]).run(device='cpu', progress=False)
    print('complete' if res.complete else 'incomplete')
''')


def _plan(root, wait=True):
    env = dict(os.environ, OMP_NUM_THREADS='1', PYTHONPATH=str(ROOT))
    env.pop('MEMLM_CKPT', None)                               # checkpoints in the run folders, where the test looks for them
    p = subprocess.Popen([sys.executable, '-c', JOB, str(root)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if wait: p.communicate(timeout=120)
    return p


def _records(root):
    return {d.name: json.loads((d/'record.json').read_text()) for d in sorted(Path(root).iterdir())}


def test_killed_plan_resumes_to_the_uninterrupted_records(tmp_path):
    ref, run = tmp_path/'ref', tmp_path/'run'
    assert _plan(ref).returncode == 0
    p = _plan(run, wait=False)
    t0 = time.time()                                          # kill once the first run has checkpointed an epoch
    while not list(run.glob('*/ckpt/train/last.pt')) and time.time() - t0 < 60: time.sleep(0.05)
    p.send_signal(signal.SIGKILL); p.wait()
    assert list(run.glob('*/ckpt/train/last.pt')) and not list(run.glob('*/record.json'))   # killed mid-run, nothing recorded
    assert _plan(run).returncode == 0
    a, b = _records(ref), _records(run)
    assert a.keys() == b.keys() and len(a) == 2
    for k in a:
        assert b[k]['status'] == 'done' and a[k]['metrics'] == b[k]['metrics'], k
        assert (a[k]['epochs'], a[k]['best_epoch'], a[k]['stop_reason']) == (b[k]['epochs'], b[k]['best_epoch'], b[k]['stop_reason'])
        assert a[k]['config'] == b[k]['config'] and a[k]['seed'] == b[k]['seed']
