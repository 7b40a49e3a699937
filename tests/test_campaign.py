"""tools/campaign.py: the priority's gpu hold, pending runs (both arms of a seed on one kind of device), the scheduler with its
deadline and 'alone' items, and the round trip run -> pack -> unpack, on toy runs on the CPU."""
import importlib, json, os, sys, time
from pathlib import Path
import pytest
from fastcore import test as fc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT/'tools'))
import memlm.experiment as mx
from memlm.experiment import load_record
from memlm.plan import Plan
from campaign import MAX_FILES, PRIORITY, _record, held_items, gpu_scale_set, pack, pending, run_campaign, unpack


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.delenv('MEMLM_RESULTS', raising=False)
    yield tmp_path
    os.environ.pop('MEMLM_RESULTS', None)


def toy(name, s, **kw): return mx.Spec(mx.toy_regression, mx.ToyConfig(**kw), seed=s, name=name)


def test_gpu_items_wait_for_the_gpu_scale(monkeypatch):
    fc.test_eq(gpu_scale_set(), True)                                         # chosen from the recorded epoch (GPU_BASIS); gpu_fit confirms
    fc.test_eq(held_items(PRIORITY), [])
    monkeypatch.setattr(importlib.import_module('memlm.awd_lstm'), 'GPU_MODEL', None)   # not chosen: the gpu-scale comparisons wait
    fc.test_eq(held_items(PRIORITY), [it for it in PRIORITY if it[1] == 'gpu' and it[0] != 'awd_lstm'])
    assert ('awd_lstm', 'gpu', ('gpu_fit',), 'alone') not in held_items(PRIORITY)   # the timing itself runs


def test_an_unreadable_record_is_none(tmp_path):
    tmp = tmp_path
    d_ = tmp
    fc.test_is(_record(d_), None)                                            # no record yet
    (d_/'record.json').write_text('{')
    fc.test_is(_record(d_), None)                                            # unreadable: run it again
    (d_/'record.json').write_text('{"status": "done"}')
    fc.test_eq(_record(d_), {'status': 'done'})


def test_round_trip_and_pending(results):
    "Three toy runs, two fast and one slow, two at a time within a deadline; packed, unpacked; pending's pairing and its remakes."
    tmp = results
    os.environ['MEMLM_RESULTS'] = str(tmp/'a'/'runs'/'gpu-results')   # an ignored copy, as on a GPU machine
    toy = lambda name, s, **kw: mx.Spec(mx.toy_regression, mx.ToyConfig(**kw), seed=s, name=name)
    plan = Plan('demo', 'cpu', {'fast': [toy('fast', s, epochs=2) for s in (0, 1)], 'slow': [toy('slow', 0, epochs=300, sleep_s=0.5)]})
    fc.test_eq([s.name for _, s in pending([(plan, ['fast', 'slow'])])], ['fast', 'fast', 'slow'])
    r = run_campaign([(plan, ['fast', 'slow'])], budget_s=30, margin_s=5, min_start_s=2, workers=2, device='cpu', threads=1, log=lambda *_: None)
    fc.test_eq((sorted(r['done']), r['incomplete'], r['failed']), (sorted(s.folder for s in plan.parts['fast']), [plan.parts['slow'][0].folder], {}))
    fc.test_eq(load_record(plan.dir(plan.parts['slow'][0]))['stop_reason'], 'time limit (checkpointed)')   # stopped cleanly, recorded
    arcs = pack(r['dirs'], tmp/'out', root=tmp/'a', max_bytes=200_000)
    assert 1 <= len(arcs) <= MAX_FILES and all(a.stat().st_size <= 200_000 for a in arcs)
    in_plan = lambda scale, paper, run: next((s for s in plan.specs() if s.folder == run), None)   # the demo paper's plan
    got = unpack(arcs, root=tmp/'b', expect_device='cpu', spec_of=in_plan)
    fc.test_eq(sorted(got), sorted(f'results/cpu/demo/runs/{d.name}/record.json' for d in r['dirs']))   # named results/ whatever MEMLM_RESULTS was
    fc.test_eq(json.loads((tmp/'b'/got[0]).read_text()), json.loads((tmp/'a'/'runs'/'gpu-results'/got[0].removeprefix('results/')).read_text()))
    fast0 = plan.dir(plan.parts['fast'][0]).name                                   # and the kept weights land where checkpoints live
    assert (tmp/'b'/'results'/'cpu'/'demo'/'runs'/fast0/'ckpt'/'train'/'weights.fp16.pt').exists()
    fc.test_fail(lambda: unpack(arcs, root=tmp/'c', expect_device='NVIDIA', spec_of=in_plan), contains='not on a NVIDIA device')
    assert not (tmp/'c').exists()                                                   # nothing written
    fc.test_eq(pending([(plan, ['fast'])]), [])                                          # done runs are never rerun
    # Both arms of a seed on one kind of device: a run whose partner of the same seed trained on the CPU waits for a CPU
    pair = Plan('pair', 'cpu', {'base': [toy('base', s, epochs=1) for s in (0, 1)], 'arm': [toy('arm', s, epochs=1, hidden=16) for s in (0, 1)]})
    mx.execute(pair.parts['base'][0], pair.root, device='cpu')                     # seed 0's base trained on the CPU
    pinned_ = []
    fc.test_eq([s.folder for _, s in pending([(pair, ['base', 'arm'])], device='cuda', pinned=pinned_)],
            [pair.parts['base'][1].folder, pair.parts['arm'][1].folder])            # seed 1 is free; seed 0's arm is not
    fc.test_eq(pinned_, [(pair.parts['arm'][0].folder, 'cpu')])
    fc.test_eq(len(pending([(pair, ['base', 'arm'])], device='cpu')), 3)              # on the CPU it runs
    grp = Plan('grp', 'cpu', {'lm': [toy(n, 0, epochs=1, hidden=h) for n, h in (('base', 4), ('arm', 5), ('big', 6), ('big_arm', 7))]},
               pair_groups={'big': 'big', 'big_arm': 'big'})                        # two comparisons in one part
    mx.execute(grp.parts['lm'][0], grp.root, device='cpu')                        # seed 0 of the first trained on the CPU
    pinned_ = []
    fc.test_eq([s.name for _, s in pending([(grp, ['lm'])], device='cuda', pinned=pinned_)], ['big', 'big_arm'])   # the other is free
    fc.test_eq(pinned_, [(grp.parts['lm'][1].folder, 'cpu')])
    grp.pair_groups = {}                                                           # one comparison: all of seed 0 waits for a CPU
    fc.test_eq(pending([(grp, ['lm'])], device='cuda'), [])
    solo = Plan('solo', 'cpu', {'long': [toy('long', 0, epochs=300, sleep_s=0.2)]})      # a run interrupted on the CPU, no partner done
    fc.test_eq(mx.execute(solo.parts['long'][0], solo.root, deadline=time.time() + 1, device='cpu')['status'], 'incomplete')
    fc.test_eq(pending([(solo, ['long'])], device='cuda'), [])                         # it finishes where it started
    fc.test_eq(len(pending([(solo, ['long'])], device='cpu')), 1)
    on_ = Plan('on', 'cpu', {'more': [mx.Spec(mx.toy_regression, mx.ToyConfig(epochs=3), 0, name='more', extends=solo.parts['long'][0])]}, root=solo.root)
    fc.test_eq(pending([(on_, ['more'])], device='cuda'), [])                         # a longer run goes on where its trunk trained (or is training)
    fc.test_eq([s.name for _, s in pending([(on_, ['more'])], device='cpu')], ['long', 'more'])
    # A fresh machine lacks the files a finished run derived for the runs that read it (`Spec.derived`): made again, first
    ad = mx.Spec(mx.toy_regression, mx.ToyConfig(epochs=1), seed=0, name='ad', derived=('train.log.jsonl',))
    bd = mx.Spec(mx.toy_regression, mx.ToyConfig(epochs=2), seed=0, name='bd', needs=(ad,))
    der = Plan('der', 'cpu', {'a': [ad], 'b': [bd]})
    mx.execute(ad, der.root, device='cpu'); (der.dir(ad)/'train.log.jsonl').unlink(); a0 = (der.dir(ad)/'record.json').stat().st_mtime_ns
    re_ = set(); fc.test_eq([s.name for _, s in pending([(der, ['b'])], remake=re_)], ['ad', 'bd']); fc.test_eq(re_, {der.dir(ad)})
    r = run_campaign([(der, ['b'])], budget_s=45, margin_s=5, min_start_s=2, workers=2, device='cpu', threads=1, log=lambda *_: None)
    fc.test_eq(r['done'], [ad.folder, bd.folder])                                     # bd waited for ad, although ad's old record said done
    assert (der.dir(ad)/'train.log.jsonl').exists() and (der.dir(ad)/'record.json').stat().st_mtime_ns != a0
    fc.test_eq(pending([(der, ['b'])]), [])                                              # and nothing is made again once they are there


def test_an_alone_item_runs_alone(results):
    "The run of an 'alone' item starts once the runs before it have finished, and nothing starts while it runs, though a worker is free."
    tmp = results
    os.environ['MEMLM_RESULTS'] = str(tmp/'results')
    plan = Plan('demo', 'cpu', {'fast': [toy('fast', s, epochs=2, sleep_s=0.3) for s in (0, 1)], 'timing': [toy('timing', 0, epochs=2, sleep_s=0.3)],
                                'after': [toy('after', 0, epochs=1)]})
    lines = []
    r = run_campaign([(plan, ['fast']), (plan, ['timing'], 'alone'), (plan, ['after'])], budget_s=60, margin_s=5, min_start_s=2, workers=3,
                     device='cpu', threads=1, log=lines.append)
    fc.test_eq(len(r['done']), 4)
    ev = [(l.split()[0], l.split()[1].rstrip(':')) for l in lines if l.startswith('  ')]     # ('started' | 'done', folder) in order
    at = lambda e: ev.index(e)
    solo = plan.parts['timing'][0].folder
    assert all(at(('done', s.folder)) < at(('started', solo)) for s in plan.parts['fast']), ev    # started on an idle pool
    assert at(('done', solo)) < at(('started', plan.parts['after'][0].folder)), ev                # nothing beside it
