"""Every gpu-scale run of a paper that declares how it fits has an estimate within `GPU_BUDGET_MIN` minutes on one H100, with its basis
(on the committed records); only an evaluation-only run (no epochs) may be 'unknown: never timed on a GPU'."""
import pytest
from memlm.plan import GPU_BUDGET_MIN, _epoch_cap, paper_plan

FITTED = ('awd_lstm', 'span_buffer', 'phrase_induction', 'short_attention', 'dynamic_skip', 'meta_dynamic', 'context_probe')   # the papers whose gpu configuration is set from a recorded or extrapolated epoch (`GPU_BASIS`)

@pytest.mark.parametrize('paper', FITTED)
def test_gpu_runs_fit(paper):
    plan = paper_plan(paper, 'gpu', [0, 1, 2])
    specs = {s.folder: s for s in plan.specs()}
    rows = [r for r in plan.status_rows() if r['status'] != 'done' and specs[r['run']].home in (None, paper)]
    assert rows, f'{paper}: no gpu-scale run left to estimate'
    for r in rows:
        if r['est_h'] is None:
            assert not _epoch_cap(specs[r['run']]), f"{paper}: training run {r['run']} has no gpu estimate"
            assert r['est_from'] == 'unknown: never timed on a GPU', f"{paper}: {r['run']} has neither an estimate nor 'unknown'"
        else:
            assert r['est_from'], f"{paper}: {r['run']} has an estimate without its source"
            assert r['est_h'] * 60 <= GPU_BUDGET_MIN + 0.3, f"{paper}: {r['run']} takes about {r['est_h'] * 60:.1f} min ({r['est_from']})"
