"""The project's plumbing: library = notebooks, the Makefile's argument checks, the template's parameters cell."""
import json, shutil, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def test_export_is_in_sync(tmp_path):
    "nbdev_export on a copy of the checkout reproduces memlm/ byte for byte (the library is never edited by hand)."
    for name in ('nbs', 'memlm'): shutil.copytree(ROOT/name, tmp_path/name, ignore=shutil.ignore_patterns('__pycache__', '.ipynb_checkpoints'))
    for name in ('settings.ini', 'setup.py'): shutil.copy(ROOT/name, tmp_path/name)
    before = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path/'memlm').rglob('*.py')}
    subprocess.run([str(BIN/'nbdev_export')], cwd=tmp_path, check=True, capture_output=True)
    after = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path/'memlm').rglob('*.py')}
    changed = sorted(str(k) for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f'nbdev_export changes {changed}: edit the notebooks and re-export'


def _make(*args):
    return subprocess.run(['make', '--no-print-directory', *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_make_rejects_unknown_scale():
    r = _make('check-args', 'SCALE=bogus')
    assert r.returncode != 0 and 'valid scales: smoke cpu gpu paper' in r.stderr


def test_make_rejects_unknown_paper():
    r = _make('check-args', 'PAPERS=nope')
    assert r.returncode != 0 and "unknown paper 'nope'" in r.stderr


def test_make_accepts_valid_scales():
    for s in ('smoke', 'cpu', 'gpu', 'paper'): assert _make('check-args', f'SCALE={s}').returncode == 0


def _param_cells(nb):
    return [c for c in nb['cells'] if 'parameters' in c.get('metadata', {}).get('tags', [])]


@pytest.mark.parametrize('nb', sorted((ROOT/'nbs').glob('1[0-9]*_*.ipynb')) + [ROOT/'nbs'/'_paper_template.ipynb'], ids=lambda p: p.name)
def test_reproduction_notebooks_have_one_smoke_parameters_cell(nb):
    "papermill needs exactly one cell tagged `parameters`, whose defaults are the smoke settings; no cell re-exports the library."
    cells = json.loads(nb.read_text())['cells']
    params = _param_cells({'cells': cells})
    assert len(params) == 1, f'{nb.name}: {len(params)} parameters cells'
    assert "scale = 'smoke'" in ''.join(params[0]['source'])
    assert not any('nbdev_export(' in ''.join(c['source']) for c in cells if c['cell_type'] == 'code')


def test_provenance_dirty_flag_ignores_run_outputs(tmp_path):
    "Runs rewrite tracked results/ and figures/ files; only a change to the code marks a record dirty."
    clone = tmp_path/'clone'
    subprocess.run(['git', 'clone', '-q', str(ROOT), str(clone)], check=True)
    probe = "from memlm.registry import provenance; print(provenance()['dirty'])"
    dirty = lambda: subprocess.run([sys.executable, '-c', probe], cwd=clone, capture_output=True, text=True,
                                   env={'PYTHONPATH': str(clone), 'PATH': '/usr/bin:/bin'}, check=True).stdout.strip()
    assert dirty() == 'False'
    (clone/'results'/'summary.md').write_text('rewritten by a run\n')
    assert dirty() == 'False'
    (clone/'memlm'/'__init__.py').write_text((clone/'memlm'/'__init__.py').read_text() + '# edited\n')
    assert dirty() == 'True'
