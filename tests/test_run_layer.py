"""The run layer under misuse, from the Makefile down: values are data (never run as code), arguments are checked before any
work, a bad PARTS replaces no report, a fully cached `make runs` says what it reused, and committed runs stay found."""
import json, os, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def _make(*args, env=None):
    return subprocess.run(['make', '--no-print-directory', 'NO_VENV=1', f'PYTHON={PY}', *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.parametrize('var,message', [
    ('WORKERS=two', "--workers: expected a positive integer, got 'two'"),
    ('WORKERS=0', "--workers: expected a positive integer, got '0'"),
    ('TIME_LIMIT=-5', "--time-limit: expected seconds (a number >= 0) or nothing, got '-5'"),
    ('TIME_LIMIT=print("pwned")', "got 'print(\"pwned\")'"),
    ('SCALE=`echo cpu`', "unknown scale '`echo cpu`'")], ids=['workers-word', 'workers-zero', 'time-negative', 'time-code', 'scale-code'])
def test_make_runs_checks_arguments_before_any_work(var, message):
    r = _make('runs', 'PAPER=span_buffer', 'RUNS=synth_base:0', var)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_make_variables_are_never_executed(tmp_path):
    flag = tmp_path/'pwned'
    for runs in (f'x:0`touch {flag}`', f'x:0$(touch {flag})', f"x:0'; touch {flag}; '"):
        r = _make('runs', 'PAPER=span_buffer', f'RUNS={runs}')
        assert r.returncode != 0 and ('expected runs' in r.stderr or "unknown run name" in r.stderr), r.stderr
    r = _make('status', f'PAPER=span_buffer`touch {flag}`')
    assert r.returncode != 0 and "unknown paper 'span_buffer`touch" in r.stderr, r.stderr
    assert not flag.exists()


def test_make_runs_refuses_a_seed_no_notebook_reads():
    r = _make('runs', 'PAPER=span_buffer', 'RUNS=synth_snb_T1:3')   # a one-seed diagnostic
    assert r.returncode != 0 and 'synth_snb_T1 has no seed 3 in this plan; its seeds: [0]' in r.stderr, r.stderr


def test_bad_parts_replace_no_report():
    before = {p: p.read_bytes() for p in (ROOT/'reports').rglob('*.ipynb')}
    r = _make('reproduce', 'SCALE=cpu', 'PAPERS=dynamic_skip', 'PARTS=bogus')
    assert r.returncode == 2 and "dynamic_skip has no part(s) 'bogus'" in r.stderr, r.stderr
    assert before == {p: p.read_bytes() for p in (ROOT/'reports').rglob('*.ipynb')}


def test_cached_make_runs_says_what_it_reused():
    r = _make('runs', 'PAPER=awd_lstm', 'SCALE=cpu', 'RUNS=sched_trunk:0 sched_decay10:0')   # finished runs that no choice moves
    assert r.returncode == 0, r.stderr
    assert 'awd_lstm (cpu): 2 of 2 runs reused from their records (sched_trunk-s0-' in r.stdout and 'nothing to run' in r.stdout, r.stdout


def test_status_lists_a_corrupt_record_and_goes_on(tmp_path):
    env = {'MEMLM_RESULTS': str(tmp_path)}
    src = ROOT/'results'/'cpu'/'awd_lstm'/'runs'
    for d in src.iterdir():
        if (d/'record.json').exists():
            (tmp_path/'cpu'/'awd_lstm'/'runs'/d.name).mkdir(parents=True); (tmp_path/'cpu'/'awd_lstm'/'runs'/d.name/'record.json').write_bytes((d/'record.json').read_bytes())
    bad = next((tmp_path/'cpu'/'awd_lstm'/'runs').glob('awd_lstm-s1-*'))/'record.json'
    bad.write_text(bad.read_text()[:50])
    r = _make('status', 'PAPER=awd_lstm', 'SCALE=cpu', env=env)
    assert r.returncode == 0, r.stderr
    assert f'{bad}: corrupt record' in r.stdout and f"rm '{bad}'" in r.stdout
    assert '| corrupt |' in r.stdout and 'awd_lstm (cpu): ' in r.stdout and 'done' in r.stdout.splitlines()[-1]


def test_committed_runs_are_still_found():
    """Every committed run that a plan read when the index was written is found by today's plans, or archived with its line in
    the archive's index.csv (what it was, what replaced it, why): moving code keeps run keys, and no record is lost."""
    import csv
    from memlm.cli import _plan_folders
    from memlm.experiment import runs_dir
    index = json.loads((ROOT/'tests'/'run_index.json').read_text())
    now = _plan_folders(data_path=os.environ.get('MEMLM_DATA'))
    def archived(key):
        scale, paper = key.split('/')
        f = runs_dir(paper, scale, archive=True)/'index.csv'
        listed = {r['run'] for r in csv.DictReader(f.open())} if f.exists() else set()
        assert all(r['was'] and r['replaced_by'] and r['why'] for r in csv.DictReader(f.open())) if f.exists() else True, f
        return {d.name for d in runs_dir(paper, scale, archive=True).iterdir() if d.is_dir() and d.name in listed} if listed else set()
    lost = {k: sorted(set(v) - set(now.get(k, [])) - archived(k)) for k, v in index.items()}
    lost = {k: v for k, v in lost.items() if v}
    assert not lost, f'runs no plan finds any more (register moved experiment functions under their recorded name with @experiment; renamed configs keep theirs with key_type): {lost}'


def test_no_archived_run_is_in_a_plan():
    "An archived run is a former recipe's: no plan of today (any paper, any run it borrows) reads it."
    from memlm.plan import paper_plan
    from memlm.cli import _papers
    for scale in ('cpu', 'gpu'):
        arch = {(d.parent.parent.name, d.name) for d in (ROOT/'results'/scale).glob('*/archive/*') if d.is_dir()}
        if not arch: continue
        live = set()
        for p in _papers():
            plan = paper_plan(p, scale, [0, 1, 2], os.environ.get('MEMLM_DATA'))
            live |= {(plan.dir(s).parent.parent.name, s.folder) for s in plan.specs()}
        assert not arch & live, sorted(arch & live)


def test_every_archived_run_has_its_record_and_index_line():
    import csv, glob
    for f in glob.glob(str(ROOT/'results'/'*'/'*'/'archive'/'index.csv')):
        rows = list(csv.DictReader(open(f)))
        folders = {d.name for d in Path(f).parent.iterdir() if d.is_dir()}
        assert {r['run'] for r in rows} == folders, f
        assert all((Path(f).parent/d/'record.json').exists() for d in folders), f


def test_checkpoints_and_stats_load_weights_only():
    "No library file unpickles arbitrary objects: every torch.load passes weights_only=True."
    import re
    calls = [(p.name, m.group(0)) for p in (ROOT/'memlm').glob('*.py') for m in re.finditer(r'torch\.load\([^)]*\)', p.read_text())]
    assert calls and all('weights_only=True' in c for _, c in calls), [c for c in calls if 'weights_only=True' not in c[1]]


def test_gpu_check_runs_notebooks_outside_results(tmp_path, repro_part):
    """make gpu-check at smoke scale (here on the CPU): executed notebooks, records and figures go to runs/gpu-check/, never results/.
    The core's notebook without its method's tests (`reproduction_part`: nbdev_test runs those); its plan at smoke scale runs."""
    before = sorted(p for p in (ROOT/'results').rglob('*') if 'smoke' not in p.parts)
    r = _make('gpu-check', f"GPU_CHECK_NBS={repro_part(ROOT/'nbs'/'09_awd_lstm.ipynb')}", env={'OMP_NUM_THREADS': '1'})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert 'gpu-check: 1 notebooks in' in r.stdout
    out = ROOT/'runs'/'gpu-check'
    assert (out/'09_awd_lstm.ipynb').exists() and list((out/'results'/'smoke'/'awd_lstm').glob('*.json'))
    assert list((out/'figures'/'smoke').rglob('*.png'))
    assert before == sorted(p for p in (ROOT/'results').rglob('*') if 'smoke' not in p.parts)


def test_a_retrain_message_names_the_run_the_plan_selects():
    "The folder awd_lstm-s0-... is the cpu plan's `adaptive_awd_lstm` (another run is labelled awd_lstm): the message names it by its folder."
    from memlm.experiment import runs_command
    from memlm.plan import paper_plan
    from memlm.registry import results_dir
    plan = paper_plan('awd_lstm', 'cpu', [0, 1, 2])
    folder = next(s.folder for s in plan.specs() if s.label == 'adaptive_awd_lstm' and s.seed == 0)
    cmd = runs_command(results_dir()/'cpu'/'awd_lstm'/'runs'/folder)
    assert cmd == f"make runs PAPER=awd_lstm SCALE=cpu RUNS='{folder}'", cmd
    assert plan.select([folder]).parts['selected'][0].folder == folder


def test_a_second_process_on_a_running_run_exits_nonzero_naming_the_holder(tmp_path):
    from memlm.experiment import _run_lock
    from memlm.plan import paper_plan
    os.environ['MEMLM_RESULTS'] = str(tmp_path)
    try:
        plan = paper_plan('awd_lstm', 'smoke', [0]); s = plan.specs()[0]
        with _run_lock(plan.dir(s)):                                      # this process "trains" it
            r = subprocess.run([PY, '-m', 'memlm.cli', 'run', '--paper', 'awd_lstm', '--scale', 'smoke', '--runs', s.folder, '--seeds', '0'],
                               cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, 'PYTHONPATH': str(ROOT)})
    finally: del os.environ['MEMLM_RESULTS']
    assert r.returncode == 3 and f'error: {s.folder} is being run by another process (pid {os.getpid()} on' in r.stderr, (r.returncode, r.stderr)


def test_status_overview_counts_corrupt_runs_and_names_each_file_once(tmp_path):
    from memlm.cli import _status_overview
    from memlm.plan import paper_plan
    os.environ['MEMLM_RESULTS'] = str(tmp_path)
    try:
        plan = paper_plan('awd_lstm', 'smoke', [0]); s = plan.specs()[0]
        plan.dir(s).mkdir(parents=True); (plan.dir(s)/'record.json').write_text('{')
        out = _status_overview('smoke', [0], paper_list=['awd_lstm'])
    finally: del os.environ['MEMLM_RESULTS']
    head, row = out.splitlines()[0].split('|'), out.splitlines()[2].split('|')
    assert row[head.index(' corrupt ')].strip() == '1', out
    assert out.count(f"{plan.dir(s)/'record.json'}: corrupt record") == 1, out


def test_every_plan_builds_with_an_empty_results_folder(tmp_path, monkeypatch):
    "A fresh machine (`make gpu-check`, a cluster node) has no records: every paper's plan at every scale still builds."
    from memlm.plan import paper_plan
    from memlm.cli import _papers
    from memlm.registry import SCALES
    monkeypatch.setenv('MEMLM_RESULTS', str(tmp_path))
    for scale in SCALES:
        for p in _papers():
            assert paper_plan(p, scale, [0, 1, 2], os.environ.get('MEMLM_DATA')).specs(), (p, scale)
