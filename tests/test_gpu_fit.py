"Every gpu-scale training run of a paper that declares how it fits has an estimate within `GPU_BUDGET_MIN` minutes on one H100, with its basis (on the committed records)."
import pytest
from memlm.plan import GPU_BUDGET_MIN, _epoch_cap, paper_plan

FITTED = ('awd_lstm',)   # the papers whose gpu configuration is set from a recorded or extrapolated epoch (`GPU_BASIS`)

@pytest.mark.parametrize('paper', FITTED)
def test_gpu_runs_fit(paper):
    plan = paper_plan(paper, 'gpu', [0, 1, 2])
    trains = {s.folder for s in plan.specs() if _epoch_cap(s) and s.home in (None, paper)}
    rows = [r for r in plan.status_rows() if r['run'] in trains and r['status'] != 'done']
    assert rows, f'{paper}: no gpu-scale training run left to estimate'
    for r in rows:
        assert r['est_h'] is not None and r['est_from'], f"{paper}: {r['run']} has no gpu estimate"
        assert r['est_h'] * 60 <= GPU_BUDGET_MIN + 0.3, f"{paper}: {r['run']} takes about {r['est_h'] * 60:.1f} min ({r['est_from']})"
