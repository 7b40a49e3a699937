"""What several test files share."""
import json
from pathlib import Path
import pytest


def reproduction_part(nb: Path, dest: Path) -> Path:
    """A copy of the paper notebook `nb` at `dest/<its name>` without the method's tests: its exported and `#|` cells (the
    module's code and imports) and its reproduction, from the cell that takes the `snapshot` of the namespace on (the
    `parameters` cell, `read_params`, the plan and its parts). What papermill then executes is what the Makefile runs of the
    notebook beyond the unit tests that nbdev_test executes already."""
    d = json.loads(Path(nb).read_text())
    code = lambda c: ''.join(c['source']) if c['cell_type'] == 'code' else ''
    start = next(i for i, c in enumerate(d['cells']) if 'snapshot(globals())' in code(c))
    d['cells'] = [c for i, c in enumerate(d['cells']) if i >= start or code(c).startswith('#|')]
    assert sum('parameters' in c.get('metadata', {}).get('tags', []) for c in d['cells']) == 1, nb
    dest.mkdir(parents=True, exist_ok=True)
    (out := dest/Path(nb).name).write_text(json.dumps(d))
    return out


@pytest.fixture
def repro_part(tmp_path):
    "`repro_part(nb)`: `reproduction_part(nb, <a temporary folder>)`."
    return lambda nb: reproduction_part(nb, tmp_path/'repro')
