"""`make docs`: the documentation site from the notebooks (tools/nbdocs.py).

- `test_api_docs_run_no_notebook_cell` (always, a few seconds): the docs processing of nbs/10_span_buffer.ipynb, as settings.ini
  configures it, gives the page its method text and an API reference with the argument comments, and executes nothing
  but `show_doc` cells (the module is imported, the notebook's cells are not run).
- `test_site` (needs Quarto, and MEMLM_DOCS_TEST=1: the whole build, 29 pages through Quarto, is too slow for `make test`): the
  site built into a temporary copy of the checkout has span_buffer.html with the method text and `SNBConfig` with its
  argument comments; where a headless Chromium is found (MEMLM_BROWSER, or chromium-headless-shell / chromium / google-chrome
  on PATH) the page is also opened in it: the DOM it renders has both, and a screenshot of the page's top (the method's
  title and description, then SNBConfig's entry) is written to MEMLM_DOCS_SHOTS/span_buffer.png (default: the test's
  temporary folder) and must not be blank (a person looks at it; no test reads text off an image).
  CI runs it as:  MEMLM_DOCS_TEST=1 PATH="$PWD/.venv/bin:$PATH" .venv/bin/python -m pytest -q tests/test_docs.py
  (after `make docs` has installed Quarto, or with Quarto on PATH).
"""
import os, re, shutil, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT/'tools'))   # settings.ini's `procs = nbdocs:api_docs`
NB, PAGE = 'nbs/10_span_buffer.ipynb', 'span_buffer.html'   # nbdev names a page after its notebook less the number
METHOD = 'RNN-minus span vectors'   # the notebook's description: the method
API = ('SNBConfig', 'words per span', 'positions the buffer covers')   # an API entry and two of its argument comments


def test_api_docs_run_no_notebook_cell(monkeypatch):
    from execnb.shell import CaptureShell
    from nbdev.config import get_config
    from nbdev.process import NBProcessor
    from nbdev.processors import FilterDefaults
    monkeypatch.chdir(ROOT); get_config.cache_clear()
    ran = []
    run_cell = CaptureShell.run_cell
    def spy(self, raw_cell, *a, **k): ran.append(raw_cell); return run_cell(self, raw_cell, *a, **k)
    monkeypatch.setattr(CaptureShell, 'run_cell', spy)
    try:
        procs = FilterDefaults().procs()
        names = [p.__name__ for p in procs]
        assert 'api_docs' in names and 'exec_show_docs' not in names, names
        nb = NBProcessor(ROOT/NB, procs=procs, process=True).nb
    finally: get_config.cache_clear()
    text = '\n'.join(c.source for c in nb.cells)
    assert METHOD in text and 'output-file: span_buffer.html' in text
    docs = '\n'.join(o['data']['text/markdown'] if isinstance(o['data']['text/markdown'], str) else ''.join(o['data']['text/markdown'])
                     for c in nb.cells if c.cell_type == 'code' for o in c.get('outputs', []) if 'text/markdown' in o.get('data', {}))
    assert '### SNBConfig' in docs and all(s in docs for s in API), docs[:2000]
    # the shell ran the module import and show_doc cells, nothing of the notebook's own
    assert ran and 'import_module' in ran[0] and all('show_doc(' in s for s in ran[1:]), [s for s in ran[1:] if 'show_doc(' not in s][:3]


def _browser() -> str | None:
    if os.environ.get('MEMLM_BROWSER'): return os.environ['MEMLM_BROWSER']
    return next(filter(None, map(shutil.which, ('chromium-headless-shell', 'chromium', 'chromium-browser', 'google-chrome'))), None)


def _open(browser: str, url: str, *args: str) -> str:
    "Run the headless browser on `url`; its stdout."
    cmd = [browser, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--virtual-time-budget=5000', *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout


def _not_blank(png: Path) -> bool:
    from PIL import Image
    lo, hi = Image.open(png).convert('L').getextrema()
    return hi - lo > 64   # dark text on a light page


@pytest.mark.skipif(os.environ.get('MEMLM_DOCS_TEST') != '1', reason='the whole site build is slow: MEMLM_DOCS_TEST=1 runs it')
@pytest.mark.skipif(not shutil.which('quarto'), reason='Quarto is not installed (make docs installs it: the docs extra)')
def test_site(tmp_path):
    for d in ('nbs', 'memlm', 'tools'): shutil.copytree(ROOT/d, tmp_path/d, ignore=shutil.ignore_patterns('__pycache__', '.ipynb_checkpoints'))
    for f in ('settings.ini', 'setup.py', 'README.md'): shutil.copy(ROOT/f, tmp_path/f)
    env = {**os.environ, 'PYTHONPATH': f'{tmp_path/"tools"}{os.pathsep}{tmp_path}', 'OMP_NUM_THREADS': '1'}
    r = subprocess.run([sys.executable, 'tools/nbdocs.py', '--n-workers', os.environ.get('DOCS_WORKERS', '2')],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    site = tmp_path/'_docs'
    assert (site/'index.html').exists() and (site/'data.html').exists()
    page = (site/PAGE).read_text(encoding='utf-8')
    assert METHOD in page and all(s in page for s in API)
    assert re.search(r'<a\s[^>]*href="(\./)?data\.html"', page)               # pages link to each other relatively
    assert not re.search(r'<a\s[^>]*href="https?://example\.org', page)       # and never to the placeholder host (settings.ini)
    assert (ROOT/'README.md').read_text() == (tmp_path/'README.md').read_text()   # the build leaves README.md alone
    if not (browser := _browser()): pytest.skip('the site built and its page checked; no headless Chromium for the browser check')
    dom = _open(browser, (site/PAGE).as_uri(), '--dump-dom')
    assert METHOD in dom and all(s in dom for s in API)
    shots = Path(os.environ.get('MEMLM_DOCS_SHOTS', tmp_path)); shots.mkdir(parents=True, exist_ok=True)
    shot = shots/'span_buffer.png'   # the page's top: its title and description (the method), then SNBConfig's entry (its 5th cell)
    _open(browser, (site/PAGE).as_uri(), f'--screenshot={shot}', '--window-size=1280,2400')
    assert shot.exists() and _not_blank(shot)
