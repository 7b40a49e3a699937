"""`make docs`: the documentation site built from the notebooks into _docs/, one page a notebook (nbdev + Quarto).

Two differences from a stock `nbdev_docs`, both so that building the site runs no notebook and writes nothing but the site:
- `api_docs` (settings.ini's `procs`, in place of nbdev's `exec_show_docs`, which `skip_procs` drops) fills the API
  reference without executing the notebook: nbdev's processor runs every cell that imports something, and ours import,
  train, time and write in the same cells. `api_docs` imports the module the notebook exports (what `import memlm.<mod>`
  runs, nothing else) and runs only the `show_doc` cells: signatures and docments (the argument comments) as nbdev renders them.
- `build` is nbdev_docs' own steps less `nbdev_readme`: README.md is `make summary`'s (the executed index.ipynb),
  which nbdev_docs would replace with an unexecuted render whenever index.ipynb is newer than it.
Quarto renders the processed notebooks as they are stored (it executes no .ipynb; _quarto.yml says so too).

    python tools/nbdocs.py            # from the repository root, with tools/ and the checkout on PYTHONPATH (as `make docs` runs it)
"""
import re, shutil, sys
from pathlib import Path
from execnb.nbio import read_nb
from execnb.shell import CaptureShell
from nbdev.config import get_config
from nbdev.process import Processor
from nbdev.processors import _is_showdoc, nb_lang


def _default_exp(path) -> str | None:
    "The module the notebook at `path` exports (its `#| default_exp`), or None."
    for c in read_nb(path).cells:
        m = re.search(r'^#\|\s*default_exp\s+(\S+)', c.source, re.M) if c.cell_type == 'code' else None
        if m: return m.group(1)
    return None


class api_docs(Processor):
    "The `show_doc` cells' output from the notebook's exported module: no cell of the notebook itself is executed."
    def begin(self):
        self.k = None   # (nbdev's rm_export has taken the `default_exp` cell out by now: it is read from the notebook's file)
        if nb_lang(self.nb) != 'python' or not getattr(self.nb, 'has_docs_', None) or not self.nb.get('path_'): return
        if not (mod := _default_exp(self.nb.path_)): return
        self.mod = f'{get_config().lib_name}.{mod}'
        self.k = CaptureShell()
        # every name of the module (its imports too), as the notebook's exported cells would have defined them
        self.k.run_cell(f'from nbdev.showdoc import show_doc\nimport importlib as _il\n'
                        f'globals().update({{k: v for k, v in vars(_il.import_module({self.mod!r})).items() if not k.startswith("__")}})')
        if self.k.exc: raise Exception(f'docs: importing {self.mod} failed') from self.k.exc

    def __call__(self, cell):
        if self.k is None or not _is_showdoc(cell): return
        self.k.cell(cell)
        if self.k.exc: raise Exception(f'docs: {self.mod}: cell {cell.idx_} failed:\n{cell.source}') from self.k.exc


def build(n_workers: int = 1) -> Path:
    "nbdev_docs without its README step: notebooks processed into _proc/, rendered by Quarto, the site moved to _docs/."
    from nbdev.quarto import _pre_docs, _sprun
    if not shutil.which('quarto'):
        sys.exit('docs: no `quarto` on PATH (`make docs` installs the docs extra, quarto-cli, into the venv)')
    cache, cfg, _ = _pre_docs(n_workers=n_workers, force=True)   # every page anew: nbdev's cache goes by notebook mtimes only
    _sprun(f'cd "{cache}" && quarto render --no-cache')
    shutil.rmtree(cfg.doc_path, ignore_errors=True)
    shutil.move(cache/cfg.doc_path.name, cfg.config_path)
    return cfg.doc_path


if __name__ == '__main__':
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n-workers', type=int, default=1, help='notebooks processed at a time')
    print(f'docs: {build(ap.parse_args().n_workers)}')
