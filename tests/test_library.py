"""The README's library script runs as written, from the wheel built from this checkout and installed in a fresh virtualenv,
against the package's front (`memlm.__all__`)."""
import os, re, subprocess, sys, sysconfig
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script() -> str:
    m = re.search(r'## Use it as a library.*?```python\n(.*?)```', (ROOT/'README.md').read_text(), re.S)
    assert m, 'README.md has no library script'
    return m.group(1)


def test_the_front_is_small_and_light():
    "About 20 names, each defined; importing them loads none of the reports' or the cluster's dependencies."
    code = ("import sys, memlm; assert len(memlm.__all__) <= 30 and all(hasattr(memlm, n) for n in memlm.__all__); "
            "print(sorted({'scipy', 'matplotlib', 'seaborn', 'pandas', 'seqeval', 'submitit', 'papermill'} & set(sys.modules)))")
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == '[]', r.stdout + r.stderr


@pytest.mark.skipif(not (os.environ.get('MEMLM_DATA') or (ROOT/'data'/'ptb').exists()), reason='PTB not here: set MEMLM_DATA')
def test_the_readme_script_runs(tmp_path):
    "Build the wheel, install it alone in a fresh venv (its dependencies seen from this venv, not downloaded), run the script there."
    run = lambda *a, **kw: subprocess.run(a, capture_output=True, text=True, timeout=300, **kw)
    r = run(sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-build-isolation', '-w', str(tmp_path/'dist'), str(ROOT))
    assert r.returncode == 0, r.stderr[-3000:]
    wheel = next((tmp_path/'dist').glob('memlm-*.whl'))
    venv = tmp_path/'venv'; py = venv/'bin'/'python'
    assert run(sys.executable, '-m', 'venv', '--without-pip', str(venv)).returncode == 0   # this venv's pip installs into it (--python)
    site = Path(run(str(py), '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])').stdout.strip())
    (site/'deps.pth').write_text(sysconfig.get_paths()['purelib'] + '\n')   # torch & co. from here; a plain path: its editable memlm stays off
    r = run(sys.executable, '-m', 'pip', '--python', str(py), 'install', '-q', '--no-deps', '--no-index', str(wheel))
    assert r.returncode == 0, r.stderr[-3000:]
    (tmp_path/'script.py').write_text('import memlm; print("from:", memlm.__file__)\n' + _script())
    r = run(str(py), 'script.py', cwd=tmp_path, env={**os.environ, 'OMP_NUM_THREADS': '1', 'MEMLM_RESULTS': str(ROOT/'results')})   # the trained runs: this checkout's
    assert r.returncode == 0, r.stderr[-3000:]
    where, *rest = r.stdout.strip().splitlines()
    assert where.startswith(f'from: {site}'), where                  # the installed wheel's memlm, not this checkout's
    r.stdout = '\n'.join(rest)
    lines = r.stdout.strip().splitlines()
    assert [l.split(':')[0] for l in lines[:2]] == ['AWD-LSTM', '+ span buffer'], r.stdout
    assert all('with dynamic evaluation' in l for l in lines[:2])
    card = dict(l.split(': ', 1) for l in lines[2:])                     # the trained run's card
    assert card['run'].startswith('cpu/span_buffer/awd_snb-s0-') and card['gate'].startswith('closed'), r.stdout
    assert {'data', 'schedule', 'metrics'} <= set(card) and 'test ppl' in card['metrics'], r.stdout
