"""Every committed claim value recomputed from the run records its aggregate names, by the recipe its claims row declares
(`recompute`, read by `claim_recipes`, which shares no code with the notebooks' aggregation): the aggregate's value, sd and n,
and the number RESULTS.md shows. A sign or direction bug in a notebook's table helper fails here once its report is rendered."""
import csv, json
from pathlib import Path
import pytest
from claim_recipes import agrees, compute, runs_by_name

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT/'results'


def _rows():
    for f in sorted((RESULTS/'claims').glob('*.csv')):
        for i, r in enumerate(csv.DictReader(open(f, newline=''))):
            for scale in ('cpu', 'gpu', 'paper'):
                p = RESULTS/scale/f.stem/f"{r['result']}.json"
                if not p.exists(): continue
                agg = json.loads(p.read_text())
                if any((RESULTS/scale/f.stem/'archive'/run).is_dir() for run in agg.get('runs') or []): continue   # a former recipe's: no claim reads it
                v = agg.get('metrics', {}).get(r['key'])
                if isinstance(v, (int, float)) and not isinstance(v, bool): yield pytest.param(f.stem, scale, r, id=f'{f.stem}-{scale}-row{i + 2}')


def _fmt(v: float) -> str: return f'{v:.2f}' if abs(v) < 1e6 else f'{v:.3g}'


@pytest.mark.parametrize('paper,scale,row', list(_rows()))
def test_claim_value_is_its_runs(paper, scale, row):
    recipe = (row.get('recompute') or '').strip()
    assert recipe, f"{paper}: the row {row['claim'][:60]!r} has a value at {scale} scale but no `recompute` recipe"
    if recipe.startswith('none:'):
        assert len(recipe) > 20, f'{paper}: say what the value is made from: {recipe!r}'
        pytest.skip(recipe)
    agg = json.loads((RESULTS/scale/paper/f"{row['result']}.json").read_text()); m = agg['metrics']
    mean, sd, n = compute(recipe, runs_by_name(RESULTS, scale, paper, agg))
    assert agrees(mean, m[row['key']]), f"{paper} {row['key']} at {scale}: the record says {m[row['key']]}, its runs ({recipe}) give {mean}"
    if f"{row['key']}_std" in m and sd is not None: assert agrees(sd, m[f"{row['key']}_std"], 1e-6) or sd == m[f"{row['key']}_std"] == 0
    if f"{row['key']}_n" in m: assert n == m[f"{row['key']}_n"]


def test_results_md_shows_the_recomputed_values():
    "RESULTS.md's row of each claim shows the value its runs give (at the scale the row reports)."
    md = (ROOT/'RESULTS.md').read_text().splitlines()
    checked = 0
    for p in _rows():
        paper, scale, row = p.values
        recipe = (row.get('recompute') or '').strip()
        if not recipe or recipe.startswith('none:'): continue
        lines = [l for l in md if l.startswith(f"| {row['claim']} |")]
        if not lines or f', {scale}' not in lines[0] and f'({scale})' not in lines[0]: continue   # the row reports another scale
        agg = json.loads((RESULTS/scale/paper/f"{row['result']}.json").read_text())
        mean, _, _ = compute(recipe, runs_by_name(RESULTS, scale, paper, agg))
        assert f'| {_fmt(mean)}' in lines[0] or f'{_fmt(mean)} (' in lines[0] or f'{_fmt(mean)} ±' in lines[0], (row['claim'][:60], _fmt(mean), lines[0][:300])
        checked += 1
    assert checked > 50, checked
