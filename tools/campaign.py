"""Spend a short-lived GPU machine on memlm's pending runs, and bring them back.

A lent machine that lives minutes, runs one command at a time and returns a few files: `run` takes the runs not yet done
from `PRIORITY`, runs as many at once as the device holds (one process each), gives each the same deadline so that all
stop cleanly (checkpointed, recorded) before the command's limit, and packs every run folder it touched into at most
`MAX_FILES` archives of `MAX_BYTES` (records and logs first, then final weights where they fit). `unpack`, on the machine
that keeps the checkout, checks the whole set of archives and only then writes their files into their run folders.

    python tools/campaign.py run --budget 540 --workers 4 --out OUT [--data DIR]     (make gpu-campaign)
    python tools/campaign.py unpack --from DIR [--device NVIDIA]                    (make unpack FROM=DIR)

It is a tool of one way of working, not part of the library: `memlm` itself runs plans on one device (`make runs`,
`WORKERS`), on a Slurm cluster (`EXECUTOR=slurm`) and parks unfinished runs (`make park`). Tests: tests/test_campaign.py,
tests/test_unpack.py.
"""
from __future__ import annotations
import functools, importlib, json, os, re, tarfile, time
from concurrent.futures import ProcessPoolExecutor, wait, FIRST_COMPLETED
import multiprocessing as mp
from pathlib import Path
from memlm.experiment import Spec, execute, load_record, ckpt_home, _record_mismatch, CorruptRecordError
from memlm.plan import Plan, paper_plan, _requires
from memlm.registry import SCALES, device_kind, results_dir


# (paper, scale, parts[, 'alone']): the order a GPU machine spends its time in
PRIORITY = (
    ('awd_lstm', 'cpu', ('schedule', 'lm', 'dynamic_eval')),        # the core's fixed-schedule recipe and its seeds (verdicts issue)
    ('phrase_induction', 'cpu', ('table1', 'ablations')),           # phrase induction re-decided on that recipe
    ('span_buffer', 'cpu', ('screen',)),                            # the span buffer's reward readings (one seed, 3 epochs each)
    ('span_buffer', 'cpu', ('forms',)),                             # each reward reading at full length, then the clipping reading
    ('meta_dynamic', 'cpu', ('pilot', 'learning')),                 # the meta-learner's budget pilots, then (budget fixed) its learning runs
    ('meta_dynamic', 'cpu', ('learning_ptb',)),                     # its PTB learners (linear and MLP), on the core's PTB LM trained here
    ('span_buffer', 'cpu', ('lm', 'dynamic_eval')),                 # span buffer Table 1 on the chosen reward reading
    ('span_buffer', 'cpu', ('ablations', 'readings', 'sweep')),     # its Table 3 ablations, the readings and the Table 5 sweep (one seed each)
    ('awd_lstm', 'gpu', ('gpu_fit',), 'alone'),                     # which gpu scale fits: candidates timed packed, nothing beside them
    ('dynamic_skip', 'cpu', ('ner_schedule',)),                     # the NER schedule pilot, then Table 2 on the schedule it fixes
    ('dynamic_skip', 'cpu', ('ner',)),
    ('span_buffer', 'gpu', ('lm',)),                                # then the gpu-scale effect claims, once the gpu scale is chosen
    ('phrase_induction', 'gpu', ('table1',)),
    ('short_attention', 'gpu', ('table1',)),
    ('dynamic_skip', 'gpu', ('ptb',)))

def gpu_scale_set() -> bool:
    "Whether the core's gpu scale has been chosen from its packed timings (`memlm.awd_lstm.GPU_MODEL`, read off part `gpu_fit`)."
    return importlib.import_module('memlm.awd_lstm').GPU_MODEL is not None

def held_items(items) -> list:
    "The gpu-scale items a campaign holds back while the gpu scale is not chosen (the timing that chooses it, part `gpu_fit`, runs)."
    if gpu_scale_set(): return []
    return [it for it in items if not isinstance(it[0], Plan) and it[1] == 'gpu' and 'gpu_fit' not in it[2]]

def _record(d: Path) -> dict | None:
    "A run's record (None: none yet, or unreadable: the campaign reruns it)."
    try: return load_record(d)
    except CorruptRecordError: return None

def pending(items, seeds=(0, 1, 2), data_path: str | None = None, device: str | None = None,
            pinned: list | None = None, alone: set | None = None, remake: set | None = None) -> list[tuple[Plan, Spec]]:
    """The runs not yet done, in priority order: `items` are `(paper, scale, parts)` or `(Plan, parts)`. With `device`: only the
    runs whose seed (the runs of that seed in the item and in the same comparison, `Plan.pair_groups`, the run itself included:
    a started run finishes where it started) has trained on no device yet or on this kind, so that both arms of a seed train on
    one kind; the others go to `pinned` as `(folder, kind they need)`. The run folders of items marked `'alone'` go to `alone`. A finished run that a pending run extends
    or needs, and whose derived files (`Spec.derived`, e.g. statistics git does not keep) are not on this machine, is listed just
    before the first run that reads it, and its folder goes to `remake`: it is trained again first."""
    out, seen = [], set()
    for it in items:
        plan, parts = (it[0], it[1]) if isinstance(it[0], Plan) else (paper_plan(it[0], it[1], list(seeds), data_path), list(it[2]))
        specs = plan.specs([p for p in parts if p in plan.parts])
        recs = {s.folder: _record(plan.dir(s)) for s in specs}              # each record read once
        on = {f: device_kind(r.get('provenance', {}).get('device')) for f, r in recs.items() if r}   # the kind each run trained on
        arms = lambda s: (s.seed, plan.pair_groups.get(s.name))            # one seed of one comparison: its arms train on one kind
        kinds = {}                                                         # (seed, comparison) -> kinds its runs trained on
        for s in specs: kinds.setdefault(arms(s), set()).update({on[s.folder]} if s.folder in on else set())
        for s in specs:
            d = plan.dir(s)
            if (recs[s.folder] or {}).get('status') == 'done' or d in seen: continue
            other = kinds[arms(s)]                                         # its partners' kinds and, if it started, its own
            if device is not None and other and device_kind(device) not in other:
                if pinned is not None: pinned.append((s.folder, ', '.join(sorted(other))))
                continue
            for r in _lost_needs(plan, s, seen):                          # derived files to make again first
                seen.add(plan.dir(r)); out.append((plan, r))
                if remake is not None: remake.add(plan.dir(r))
            seen.add(d); out.append((plan, s))
            if alone is not None and it[-1] == 'alone': alone.add(d)
    return out

def _lost_needs(plan: Plan, s: Spec, seen: set) -> list[Spec]:
    "The finished runs `s` extends or needs whose derived files are missing here, and in turn theirs, outermost first."
    out = []
    for r in _requires(s):
        d = plan.dir(r)
        if d in seen or r in out: continue
        if plan.derived_missing(r) and (_record(d) or {}).get('status') == 'done':
            out += [q for q in _lost_needs(plan, r, seen) if q not in out] + [r]   # remade in turn: what it reads first
    return out

def _job(spec: Spec, root: str, deadline: float, device: str, threads: int | None, rerun: bool = False) -> tuple[str, dict | str]:
    import torch
    if threads: torch.set_num_threads(threads)
    try: return 'ok', execute(spec, Path(root), deadline=deadline, device=device, rerun=rerun)
    except Exception as e: return 'failed', f'{type(e).__name__}: {e}'[-2000:]

def run_campaign(items=PRIORITY, *, budget_s: float = 540., workers: int = 4, device: str | None = None, seeds=(0, 1, 2),
                 data_path: str | None = None, margin_s: float = 45., min_start_s: float = 60., threads: int | None = None, log=print) -> dict:
    """Run the pending runs of `items` in priority order, `workers` at a time, all stopping by `budget_s - margin_s`.
    No run starts with less than `min_start_s` left; a run of an `'alone'` item starts on an idle pool and nothing starts beside it;
    gpu-scale comparisons wait for the gpu scale (`held_items`). Returns {'done', 'incomplete', 'failed', 'not_started',
    'held' (items), 'dirs' (run folders touched)}."""
    import torch
    device = device or ('cuda' if torch.cuda.is_available() else 'cpu')
    t0 = time.time(); deadline = t0 + budget_s - margin_s
    threads = threads or max(1, (os.cpu_count() or 1) // workers)     # the host's cores shared by the runs, no oversubscription
    pinned, alone, remake, held = [], set(), set(), held_items(items)
    todo = pending([it for it in items if it not in held], seeds, data_path, device=device, pinned=pinned, alone=alone, remake=remake)
    log(f'campaign: {len(todo)} pending runs, {workers} at a time on {device}, deadline in {deadline - t0:.0f} s'
        + (f'; {len(pinned)} left to another kind of device, where their partners of the same seed trained' if pinned else '')
        + (f'; {len(held)} gpu-scale items held until the gpu scale is chosen (memlm.awd_lstm.GPU_MODEL, from part gpu_fit)' if held else '')
        + (f'; {len(remake)} finished runs made again first (their derived files are not on this machine)' if remake else ''))
    out = dict(done=[], incomplete=[], failed={}, not_started=[], held=held, dirs=[])
    running, left = {}, list(todo)
    ctx = mp.get_context('spawn')
    with ProcessPoolExecutor(workers, mp_context=ctx) as ex:
        while left or running:
            status = lambda s, plan: (load_record(plan.dir(s)) or {}).get('status')
            ready = [(p, s) for p, s in left if all(status(r, p) == 'done' and p.dir(r) not in remake for r in p.requires(s))]
            while ready and len(running) < workers and time.time() < deadline - min_start_s:
                if running and (ready[0][0].dir(ready[0][1]) in alone or any(q.dir(r) in alone for q, r in running.values())): break
                p, s = ready.pop(0); left.remove((p, s)); out['dirs'].append(p.dir(s))
                running[ex.submit(_job, s, str(p.dir(s).parent), deadline, device, threads, p.dir(s) in remake)] = (p, s)
                log(f'  started {s.folder} ({p.paper}, {p.scale})')
            if not running: break                                        # nothing ready can start (dependencies or time)
            fin, _ = wait(running, timeout=5, return_when=FIRST_COMPLETED)
            for f in fin:
                p, s = running.pop(f); kind, r = f.result()
                if kind == 'failed': out['failed'][s.folder] = r; log(f'  FAILED {s.folder}: {r[-300:]}')
                else:
                    out['done' if r['status'] == 'done' else 'incomplete'].append(s.folder)
                    if r['status'] == 'done': remake.discard(p.dir(s))            # made again: what reads it may start
                    log(f"  {r['status']} {s.folder}: {r.get('epochs')} epochs ({r.get('stop_reason')}), {r['train_time_s']:.0f} s training")
    out['not_started'] = [s.folder for _, s in left]
    log(f"campaign: {len(out['done'])} done, {len(out['incomplete'])} incomplete, {len(out['failed'])} failed, "
        f"{len(out['not_started'])} not started, in {time.time() - t0:.0f} s")
    return out

MAX_FILES, MAX_BYTES = 8, 16_000_000

def pack(dirs: list[Path], out_dir: Path, root: Path | None = None, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES,
         weights: bool = True) -> list[Path]:
    "Archive the run folders `dirs` (records and logs, then final weights where they fit) into <= `max_files` tar.gz of <= `max_bytes`."
    root, res = Path(root or results_dir().parent), results_dir().resolve()
    out_dir = Path(out_dir); out_dir.mkdir(parents=True, exist_ok=True)
    small = [f for d in dirs for f in sorted(Path(d).glob('*')) if f.is_file() and f.name not in ('.lock', '.session')]
    big = sorted((f for d in dirs for f in ckpt_home(d).glob('*/weights.fp16.pt')), key=lambda f: f.stat().st_size) if weights else []
    archives, cur, size = [], None, 0
    def open_new():
        nonlocal cur, size
        if cur is not None: cur.close()
        if len(archives) >= max_files: return False
        archives.append(out_dir/f'runs-{len(archives):02d}.tar.gz'); cur, size = tarfile.open(archives[-1], 'w:gz'), 0
        return True
    open_new()
    for f in small + big:
        est = f.stat().st_size if f.suffix == '.pt' else f.stat().st_size // 3
        if size + est > max_bytes * 0.95 and not open_new(): break
        if f.suffix == '.pt':                                   # weights: by run, wherever this machine's checkpoints live
            run = next(d for d in dirs if ckpt_home(d) in f.parents)
            arc = '/'.join(('__ckpt__', *Path(run).resolve().parts[-4:], f.parent.name, f.name))
        elif res in f.resolve().parents: arc = 'results/' + f.resolve().relative_to(res).as_posix()   # the results root, by its name here
        else: arc = f.relative_to(root).as_posix()
        cur.add(f, arcname=arc); size += est
    if cur is not None: cur.close()
    return [a for a in archives if a.stat().st_size > 45]

_NAME = re.compile(r'^[A-Za-z0-9_+=-][A-Za-z0-9_.+=-]*$')             # a file or folder name: no links, no '..', no hidden files
_RUN = re.compile(r'^[A-Za-z0-9_.+=-]+-s[0-9]+-[0-9a-f]{10}$')         # <name>-s<seed>-<key>

def _member_place(name: str) -> tuple[str, str, str, tuple[str, ...]]:
    """(scale, paper, run, the path under the run folder) of an archive member `pack` writes: `results/<scale>/<paper>/runs/<run>/<file>`,
    or `__ckpt__/<scale>/<paper>/runs/<run>/<stage>/weights.fp16.pt`; anything else raises `ValueError`."""
    parts = name.split('/')
    if len(parts) == 6 and parts[0] == 'results': rest = parts[5:]
    elif len(parts) == 7 and parts[0] == '__ckpt__' and parts[6] == 'weights.fp16.pt': rest = parts[5:]
    else: raise ValueError(f'{name!r} is not a run file (results/<scale>/<paper>/runs/<run>/<file>) or run weights (__ckpt__/...)')
    scale, paper, runs, run = parts[1:5]
    if scale not in SCALES or runs != 'runs' or not _RUN.match(run) or not all(map(_NAME.match, (paper, *rest))):
        raise ValueError(f'{name!r}: not a scale, paper, run folder and file name as memlm writes them')
    return scale, paper, run, tuple(rest)

@functools.lru_cache(maxsize=None)
def _plan(scale: str, paper: str) -> Plan: return paper_plan(paper, scale, [0, 1, 2])

def _plan_spec(scale: str, paper: str, run: str) -> Spec | None:
    "The run of `paper`'s plan at `scale` whose folder is `run` (today's recipe or a retired one), or None."
    return _plan(scale, paper).by_folder(run)

def _inside(path: Path, base: Path) -> bool:
    "Whether `path`, every link on the way followed, stays inside `base` (links followed too)."
    return path.resolve().is_relative_to(base.resolve())

def unpack(archives: list[Path], root: Path | None = None, expect_device: str | None = 'NVIDIA', spec_of=_plan_spec) -> list[str]:
    """Put campaign archives (`pack`) into the checkout at `root` (default: the folder holding `results_dir()`): run files under
    `results/`, weights where this machine keeps checkpoints (`ckpt_home`). The whole set is checked before anything is written:
    every member is a regular file at a place `pack` writes (`_member_place`: no links, devices or folders); every run folder has
    its record in the set, a record that ran on a device naming `expect_device` (None: any) and that is the run its folder names
    in the paper's plan (`spec_of(scale, paper, run)`, checked by `_record_mismatch`). Each file is written aside and renamed over
    its destination, which must stay inside its run folder (or checkpoint folder) with every link resolved: a link there is
    replaced, never followed. Returns the records' member names."""
    root = Path(root or results_dir().parent); files, recs = [], {}
    for a in archives:
        with tarfile.open(a) as t:
            for m in t.getmembers():
                if not m.isreg(): raise ValueError(f'{a}: {m.name!r} is not a regular file (a link, folder or device); nothing unpacked')
                try: place = _member_place(m.name)
                except ValueError as e: raise ValueError(f'{a}: {e}; nothing unpacked') from None
                data = t.extractfile(m).read(); files.append((place, data))
                if place[3] == ('record.json',): recs[place[:3]] = (a, m.name, data)
    if not recs: raise ValueError(f"no run record in {', '.join(map(str, archives))}: nothing unpacked")
    for place, _ in files:
        if place[:3] not in recs: raise ValueError(f"{'/'.join(place[:2])}/runs/{place[2]}: files without its record.json; nothing unpacked")
    for (scale, paper, run), (a, name, data) in recs.items():
        try: rec = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as e: raise ValueError(f'{a}: {name} is not JSON ({e}); nothing unpacked') from None
        if not isinstance(rec, dict) or rec.get('status') not in ('done', 'incomplete'): raise ValueError(f'{a}: {name} is not a run record; nothing unpacked')
        dev = (rec.get('provenance') or {}).get('device') or ''
        if expect_device and expect_device not in dev: raise ValueError(f'{a}: {name} ran on {dev!r}, not on a {expect_device} device; nothing unpacked')
        try: spec = spec_of(scale, paper, run)
        except ModuleNotFoundError: spec = None
        if spec is None: raise ValueError(f"{a}: {name}: {paper}'s plan at scale {scale} has no run {run}; nothing unpacked")
        if why := _record_mismatch(rec, spec): raise ValueError(f'{a}: {name} is not the record of the run its folder names ({why}); nothing unpacked')
    res = root/'results'
    def place_of(scale, paper, run, rest) -> Path:
        d = res/scale/paper/'runs'/run
        if len(rest) == 1: base, dst = d, d/rest[0]
        else: base, dst = Path(os.environ.get('MEMLM_CKPT') or d), ckpt_home(d)/rest[0]/rest[1]
        if not (_inside(d, res) and _inside(dst.parent, base)): raise ValueError(f'{dst}: a link on the way leads outside {base}; nothing unpacked')
        if dst.is_dir() and not dst.is_symlink(): raise ValueError(f'{dst} is a folder; nothing unpacked')
        return dst
    dsts = [(place_of(*place), data) for place, data in files]            # every destination checked before the first write
    for dst, data in dsts:
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f'.{dst.name}.unpack{os.getpid()}'); tmp.write_bytes(data); os.replace(tmp, dst)
    return sorted(name for _, name, _ in recs.values())


def main(argv=None) -> int:
    """`python tools/campaign.py run --budget 540 --workers 4 --out OUT [--data DIR]`: run the pending runs and pack their folders into OUT;
    `python tools/campaign.py unpack --from DIR [--device NVIDIA]`: put the archives of DIR into results/, every record checked."""
    import argparse
    from memlm.cli import _positive_int, _time_limit
    p = argparse.ArgumentParser(prog='tools/campaign.py', description=__doc__)
    sub = p.add_subparsers(dest='cmd', required=True)
    g = sub.add_parser('run', help='spend a GPU machine: pending runs in priority order, packed, archived')
    g.add_argument('--budget', default=540., type=_time_limit, help='seconds this command may take (default 540)')
    g.add_argument('--workers', default=4, type=_positive_int, help='runs at once on the device')
    g.add_argument('--out', default='runs/campaign', help='where the archives go')
    g.add_argument('--data', default='', help='folder with the corpora (default: $MEMLM_DATA, else data/)')
    u = sub.add_parser('unpack', help="put a campaign's archives into results/, checking that every record names the GPU")
    u.add_argument('--from', dest='src', required=True, help='the folder with runs-*.tar.gz')
    u.add_argument('--device', default='NVIDIA', help="what every record's device must contain")
    a = p.parse_args(argv)
    if a.cmd == 'run':
        r = run_campaign(budget_s=a.budget or 540., workers=a.workers, data_path=a.data or os.environ.get('MEMLM_DATA') or None)
        arcs = pack(r['dirs'], Path(a.out))
        print(f"archives: {', '.join(str(x) for x in arcs)}; failed: {r['failed'] or 'none'}"); return 0 if not r['failed'] else 1
    arcs = sorted(Path(a.src).glob('runs-*.tar.gz'))
    if not arcs: raise SystemExit(f'error: no runs-*.tar.gz in {a.src}')
    try: got = unpack(arcs, expect_device=a.device or None)
    except ValueError as e: raise SystemExit(f'error: {e}') from None
    print(f'{len(got)} run records unpacked from {len(arcs)} archives'); return 0


if __name__ == '__main__': raise SystemExit(main())
