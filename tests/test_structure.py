"""The library's structure: each notebook writes one module, its own, the same alone as with all the others; no import circle."""
import ast, json, re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBS = sorted(p for p in (ROOT/'nbs').glob('*.ipynb') if not p.name.startswith('_'))


def _code(nb: Path) -> list[str]:
    return [''.join(c['source']) for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code']


def test_each_notebook_exports_only_its_own_module():
    "No `#| export <module>` (a cell sent to another notebook's module); at most one default_exp per notebook, and no module twice."
    owner = {}
    for nb in NBS:
        cells = _code(nb)
        other = [c.splitlines()[0] for c in cells if re.match(r'#\|[ \t]*exporti?[ \t]+\S', c)]
        assert not other, f'{nb.name} exports into another module: {other}'
        mods = [m for c in cells for m in re.findall(r'^#\|[ \t]*default_exp[ \t]+(\S+)', c, re.M)]
        assert len(mods) <= 1, f'{nb.name}: {mods}'
        for m in mods:
            assert m not in owner, f'{m} is written by {owner[m]} and {nb.name}'
            owner[m] = nb.name


def test_a_notebook_exported_alone_writes_the_committed_module(tmp_path, monkeypatch):
    """A stock export of any one notebook, in a checkout of nothing but the notebooks and settings.ini, gives its module as
    committed, byte for byte (that exporting them all gives the committed library is `make lint`'s check)."""
    import shutil
    from nbdev.config import get_config
    from nbdev.export import nb_export
    shutil.copytree(ROOT/'nbs', tmp_path/'nbs'); shutil.copy(ROOT/'settings.ini', tmp_path)
    monkeypatch.chdir(tmp_path); get_config.cache_clear()
    try:
        for nb in NBS:
            mods = [m for c in _code(nb) for m in re.findall(r'^#\|[ \t]*default_exp[ \t]+(\S+)', c, re.M)]
            if not mods: continue
            shutil.rmtree(tmp_path/'memlm', ignore_errors=True)
            nb_export(tmp_path/'nbs'/nb.name)
            written = sorted(p.relative_to(tmp_path/'memlm').as_posix() for p in (tmp_path/'memlm').rglob('*.py'))
            assert written == [f'{mods[0]}.py'], f'{nb.name} wrote {written}'
            assert (tmp_path/'memlm'/written[0]).read_bytes() == (ROOT/'memlm'/written[0]).read_bytes(), f'{nb.name}: memlm/{written[0]} differs'
    finally: get_config.cache_clear()


def _imports() -> dict[str, set[str]]:
    "module -> the memlm modules it imports, anywhere in it (inside functions too, and through importlib with a literal name)."
    mods = {p.stem: p for p in (ROOT/'memlm').glob('*.py') if p.stem not in ('__init__', '_modidx')}
    graph = {}
    for m, p in mods.items():
        deps = set()
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom):
                path = ('memlm.' if n.level else '') + (n.module or '')
                if path.startswith('memlm.'): deps.add(path.split('.')[1])
                elif path.rstrip('.') == 'memlm': deps.update(a.name for a in n.names)
            elif isinstance(n, ast.Import): deps.update(a.name.split('.')[1] for a in n.names if a.name.startswith('memlm.'))
            elif (isinstance(n, ast.Call) and getattr(n.func, 'attr', getattr(n.func, 'id', '')) == 'import_module' and n.args
                  and isinstance(n.args[0], ast.Constant) and str(n.args[0].value).startswith('memlm.')):
                deps.add(n.args[0].value.split('.')[1])
        graph[m] = {d for d in deps if d in mods and d != m}
    return graph


def _cycle(graph: dict) -> list[str] | None:
    "One import circle of `graph`, or None (depth-first search)."
    state, stack = {}, []
    def visit(v):
        state[v] = 'open'; stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 'open': return stack[stack.index(w):] + [w]
            if w not in state and (c := visit(w)): return c
        state[v] = 'done'; stack.pop()
    return next((c for v in sorted(graph) if v not in state and (c := visit(v))), None)


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == ['a', 'b', 'c', 'a']
    assert _cycle({'a': {'b'}, 'b': set(), 'c': {'a', 'b'}}) is None


def test_no_import_circle():
    "The package's modules import one another in one direction only: none reaches itself, not even through an import in a function."
    assert (c := _cycle(_imports())) is None, ' -> '.join(c)
