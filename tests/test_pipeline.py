"""The project's plumbing: library = notebooks; the Makefile's argument checks (`memlm.cli`); the reproduction notebooks (09, 1N, the template) use the experiment layer; papermill parameter errors stop before any run; the provenance dirty flag."""
import json, os, shutil, subprocess, sys, textwrap
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def test_export_is_in_sync(tmp_path):
    """A stock `nbdev_export`, run twice into an empty package, writes memlm/ byte for byte: every notebook's module, and the runs
    modules a paper notebook appends to (each started afresh by its stub notebook, sorted before it), none stale, nothing appended twice."""
    shutil.copytree(ROOT/'nbs', tmp_path/'nbs', ignore=shutil.ignore_patterns('.ipynb_checkpoints'))
    for name in ('settings.ini', 'setup.py', 'memlm/__init__.py'): (tmp_path/name).parent.mkdir(exist_ok=True); shutil.copy(ROOT/name, tmp_path/name)
    for _ in range(2): subprocess.run([str(BIN/'nbdev_export')], cwd=tmp_path, check=True, capture_output=True)
    lib = lambda root: {p.relative_to(root): p.read_bytes() for p in (root/'memlm').rglob('*.py') if '__pycache__' not in p.parts}
    before, after = lib(ROOT), lib(tmp_path)
    stale = sorted(str(k) for k in set(before) - set(after))
    assert not stale, f'no notebook writes {stale}: git rm them'
    changed = sorted(str(k) for k in after if before.get(k) != after[k])
    assert not changed, f'nbdev_export changes {changed}: edit the notebooks and run nbdev_export (or make export)'


def _make(*args):
    return subprocess.run(['make', '--no-print-directory', *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_make_rejects_unknown_scale():
    r = _make('reproduce', 'SCALE=bogus')
    assert r.returncode != 0 and "unknown scale 'bogus'; valid: smoke, cpu, gpu, paper" in r.stderr


def test_make_rejects_unknown_paper():
    r = _make('reproduce', 'PAPERS=nope')
    assert r.returncode != 0 and "unknown paper(s) 'nope'" in r.stderr


def test_make_accepts_valid_scales(capsys):
    """`python -m memlm.cli check` (what `make reproduce` runs first) accepts every scale: its `main`, in this process (the command's
    exit status on a refusal is the tests above, and test_run_layer's `make reproduce SCALE=cpu ... PARTS=bogus` gets past the scale)."""
    from memlm.cli import main, _papers
    for s in ('smoke', 'cpu', 'gpu', 'paper'):
        assert main(['check', '--scale', s]) == 0, s
        assert capsys.readouterr().out.split() == _papers(), s   # every paper, when PAPERS names none


def _param_cells(nb):
    return [c for c in nb['cells'] if 'parameters' in c.get('metadata', {}).get('tags', [])]


REPRO_NBS = sorted((ROOT/'nbs').glob('09_*.ipynb')) + sorted((ROOT/'nbs').glob('1[0-9]_*.ipynb'))


@pytest.mark.parametrize('nb', REPRO_NBS + [ROOT/'nbs'/'_paper_template.ipynb'], ids=lambda p: p.name)
def test_reproduction_notebooks_use_the_experiment_layer(nb):
    "One `parameters` cell with the smoke defaults and (at least) NotebookParams' fields, checked by read_params; globals and claims checked; no cell re-exports the library."
    from memlm.experiment import NotebookParams
    from dataclasses import fields
    cells = json.loads(nb.read_text())['cells']
    params = _param_cells({'cells': cells})
    assert len(params) == 1, f'{nb.name}: {len(params)} parameters cells'
    src = ''.join(params[0]['source'])
    assert "scale = 'smoke'" in src
    names = [l.split('=')[0].strip() for l in src.splitlines() if '=' in l and not l.startswith((' ', '#'))]
    assert {f.name for f in fields(NotebookParams)} <= set(names), f'{nb.name}: parameters {names}'
    code = '\n'.join(''.join(c['source']) for c in cells if c['cell_type'] == 'code')
    for needed in ('snapshot(globals())', 'read_params(globals(), before', 'global_reads(globals())', 'unrecorded_claims('):
        assert needed in code, f'{nb.name} lacks {needed}'
    assert not any('nbdev_export(' in ''.join(c['source']) for c in cells if c['cell_type'] == 'code')


def test_bad_parameters_fail_before_any_work(tmp_path, repro_part):
    """A typo in a papermill parameter stops the notebook with the valid choices, before a run starts (an unknown part or scale
    is refused by the same `read_params`: its unit tests, 05_experiment). The core's notebook without its method's tests
    (`reproduction_part`: nbdev_test runs those), so that papermill reaches the parameters at once."""
    r = subprocess.run([str(BIN/'papermill'), '--cwd', 'nbs', str(repro_part(ROOT/'nbs'/'09_awd_lstm.ipynb')), str(tmp_path/'out.ipynb'), '-p', 'sclae', 'cpu'],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, 'MEMLM_RESULTS': str(tmp_path/'results')})
    assert r.returncode != 0 and "unknown parameter(s) 'sclae'; valid parameters: scale, parts" in r.stderr + r.stdout, r.stderr[-2000:]
    assert not (tmp_path/'results').exists()      # nothing was run or recorded


def test_provenance_dirty_flag_ignores_run_outputs(tmp_path):
    "Runs rewrite tracked results/, figures/, reports/ and README.md; only a change to the code marks a record dirty."
    clone = tmp_path/'clone'
    subprocess.run(['git', 'clone', '-q', str(ROOT), str(clone)], check=True)
    # one process: its records' flag (read at import), the checkout's state after a run's output and after a code edit
    probe = textwrap.dedent("""
        from pathlib import Path
        from memlm.registry import _code_state, _provenance
        print(_provenance()['dirty'])
        Path('results/summary.md').write_text('rewritten by a run\\n'); print(_code_state()['dirty'])
        Path('memlm/__init__.py').write_text(Path('memlm/__init__.py').read_text() + '# edited\\n'); print(_code_state()['dirty'])
        print(_provenance()['dirty'])   # this process's records keep the code it imported
    """)
    run = lambda code: subprocess.run([sys.executable, '-c', code], cwd=clone, capture_output=True, text=True,
                                      env={'PYTHONPATH': str(clone), 'PATH': '/usr/bin:/bin', **{k: v for k, v in os.environ.items() if k == 'PYTHONPYCACHEPREFIX'}},
                                      check=True).stdout.split()
    assert run(probe) == ['False', 'False', 'True', 'False']
    assert run("from memlm.registry import _provenance; print(_provenance()['dirty'])") == ['True']   # a process that imports the edited code
