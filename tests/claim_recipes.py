"""How every committed claim value is made from the run records its aggregate names: the `recompute` column of
`results/claims/<paper>.csv`, read and computed here with nothing from memlm's own aggregation code (an independent path).

A recipe is one of (runs selected by run name among the aggregate's `runs`; `A+B` joins two names that hold disjoint seeds;
metrics may be nested, `curves/drop/all/100`; every comparison is paired by seed):
  mean <metric> @ <runs>               the mean over seeds (`mean100`: of 100 × the metric)
  diff <metric> @ <A> - <B>            A − B per seed
  pct <metric> @ <A> / <B>             100 (A / B − 1) per seed (`<B>*`: B's one run is every seed's reference)
  dlog <metric> @ <A> - <B>            log A − log B per seed (of a perplexity: the NLL difference in nats)
  diff <m1> - <m2> @ <runs>            m1 − m2 of the same run, per seed
  pct <m1> / <m2> @ <runs>             100 (m1 / m2 − 1) of the same run, per seed
  ratio <m1> / <m2> @ <runs>           m1 / m2 of the same run, per seed
  dpct <m1> / <m2> @ <A> - <B>         100 (m1 / m2 − 1) of A minus that of B, per seed
  sdpct <metric> @ <runs>              100 × sd / mean over seeds (one value)
  none: <why>                          not made from run records (say from what)
"""
import json, math, re, statistics
from pathlib import Path

OPS = ('mean', 'mean100', 'diff', 'pct', 'dlog', 'ratio', 'dpct', 'sdpct')


def flat(m: dict, pre: str = '') -> dict:
    out = {}
    for k, v in m.items():
        if isinstance(v, dict): out |= flat(v, f'{pre}{k}/')
        elif isinstance(v, (int, float)) and not isinstance(v, bool): out[f'{pre}{k}'] = float(v)
    return out


def runs_by_name(results: Path, scale: str, paper: str, agg: dict) -> dict[str, dict[int, dict]]:
    "{run name: {seed: flattened metrics}} of the finished runs the aggregate names (a borrowed run from its home paper)."
    out = {}
    for folder in agg.get('runs') or []:
        p = results/scale/paper/'runs'/folder/'record.json'
        if not p.exists(): p = next(iter(results.glob(f'{scale}/*/runs/{folder}/record.json')), p)
        if not p.exists(): continue
        r = json.loads(p.read_text())
        if r.get('status') == 'done' and isinstance(r.get('metrics'), dict):
            out.setdefault(folder.rsplit('-', 2)[0], {})[r['seed']] = flat(r['metrics'])
    return out


def _runs(groups: dict, spec: str) -> dict[int, dict]:
    out = {}
    for name in spec.split('+'):
        if name not in groups: raise KeyError(f'no finished runs named {name!r} behind the aggregate (it names {sorted(groups)})')
        both = set(out) & set(groups[name])
        if both: raise ValueError(f'{spec}: seeds {sorted(both)} in more than one of its names')
        out |= groups[name]
    return out


def compute(recipe: str, groups: dict) -> tuple[float, float | None, int]:
    "(mean, sd, n) of a recipe over the runs `groups`."
    op, _, rest = recipe.strip().partition(' ')
    if op not in OPS: raise ValueError(f'unknown recipe op {op!r} in {recipe!r}; valid: {", ".join(OPS)}')
    lhs, _, rhs = rest.partition(' @ ')
    lhs, rhs = lhs.strip(), rhs.strip()
    two_runs = re.fullmatch(r'(\S+) ([-/]) (\S+)', rhs)
    two_metrics = re.fullmatch(r'(\S+) ([-/]) (\S+)', lhs)
    if op in ('mean', 'mean100', 'sdpct'):
        R = _runs(groups, rhs); xs = [R[s][lhs] for s in sorted(R)]
        if op == 'mean100': xs = [100 * x for x in xs]
        if op == 'sdpct': return 100 * statistics.stdev(xs) / statistics.mean(xs), None, len(xs)
    elif two_runs and not two_metrics:                     # one metric, two arms
        ref = two_runs.group(3).endswith('*')
        A, B = _runs(groups, two_runs.group(1)), _runs(groups, two_runs.group(3).rstrip('*'))
        if ref and len(B) != 1: raise ValueError(f'{recipe!r}: a reference (*) must be one run, not {len(B)}')
        Bs = (lambda s, b=next(iter(B.values())): b) if ref else (lambda s: B[s])
        seeds = [s for s in sorted(A) if ref or s in B]
        if op == 'diff': xs = [A[s][lhs] - Bs(s)[lhs] for s in seeds]
        elif op == 'pct': xs = [100 * (A[s][lhs] / Bs(s)[lhs] - 1) for s in seeds]
        elif op == 'dlog': xs = [math.log(A[s][lhs]) - math.log(Bs(s)[lhs]) for s in seeds]
        else: raise ValueError(f'{recipe!r}: {op} of one metric over two arms')
    elif two_metrics and not two_runs:                     # two metrics of the same runs
        R, m1, m2 = _runs(groups, rhs), two_metrics.group(1), two_metrics.group(3)
        f = {'diff': lambda a, b: a - b, 'pct': lambda a, b: 100 * (a / b - 1), 'ratio': lambda a, b: a / b}.get(op)
        if f is None: raise ValueError(f'{recipe!r}: {op} of two metrics needs one set of runs')
        xs = [f(R[s][m1], R[s][m2]) for s in sorted(R)]
    elif op == 'dpct' and two_runs and two_metrics:
        A, B, m1, m2 = _runs(groups, two_runs.group(1)), _runs(groups, two_runs.group(3)), two_metrics.group(1), two_metrics.group(3)
        xs = [100 * (A[s][m1] / A[s][m2] - 1) - 100 * (B[s][m1] / B[s][m2] - 1) for s in sorted(A) if s in B]
    else: raise ValueError(f'cannot read recipe {recipe!r}')
    if not xs: raise ValueError(f'{recipe!r}: no seed has both arms')
    return statistics.mean(xs), statistics.stdev(xs) if len(xs) > 1 else 0., len(xs)


def agrees(a, b, rel=1e-9) -> bool:
    return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)
