"""`make unpack` (`python tools/campaign.py unpack`) with crafted archives: nothing outside the run folders changes, and an archive that
is not what `pack` writes, or whose records are not the runs their folders name, changes nothing at all."""
import contextlib, io, json, os, subprocess, sys, tarfile
from unittest import mock
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _spec():
    from memlm.plan import paper_plan
    return paper_plan('awd_lstm', 'smoke', [0, 1, 2]).specs()[0]


def _record(spec, **kw):
    from memlm.experiment import _config_dict, _key_name
    return dict(name=spec.name, key=spec.key, fn=_key_name(spec.fn), config=_config_dict(spec.cfg), seed=spec.seed, data_id=spec.data_id,
                status='done', metrics={'test_ppl': 1.0}, provenance={'device': 'NVIDIA H100 80GB HBM3'}) | kw


def _archive(path: Path, members: list) -> Path:
    "members: (name, bytes) regular files, or (name, ('link', target)) symbolic links, in order."
    path.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path/'runs-00.tar.gz', 'w:gz') as t:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            if isinstance(data, tuple): ti.type, ti.linkname = tarfile.SYMTYPE, data[1]; t.addfile(ti)
            else: ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    return path


def _unpack(ck: Path, src: Path, process: bool = False):
    """`python tools/campaign.py unpack` in a checkout whose results live in `ck/results` (the checkout root is `ck`): its `main`
    in this process (its exit status and output as the command's), or with `process` the command itself."""
    env = {**os.environ, 'MEMLM_RESULTS': str(ck/'results'), 'PYTHONPATH': str(ROOT)}
    env.pop('MEMLM_CKPT', None)
    argv = ['unpack', '--from', str(src)]
    if process:
        return subprocess.run([sys.executable, str(ROOT/'tools'/'campaign.py'), *argv], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    if str(ROOT/'tools') not in sys.path: sys.path.insert(0, str(ROOT/'tools'))
    import campaign
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env, clear=True), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try: code = campaign.main(argv)
        except SystemExit as e:   # as the interpreter ends on it: a message goes to stderr with status 1
            code = e.code if isinstance(e.code, int) or e.code is None else (print(e.code, file=sys.stderr) or 1)
    return subprocess.CompletedProcess(argv, code or 0, out.getvalue(), err.getvalue())


@pytest.fixture
def checkout(tmp_path):
    "A checkout with a Makefile, a module and a notebook: what a hostile archive aims at."
    ck = tmp_path/'ck'
    for f in ('Makefile', 'memlm/cli.py', 'nbs/10_span_buffer.ipynb'): (ck/f).parent.mkdir(parents=True, exist_ok=True); (ck/f).write_text('original\n')
    (ck/'results').mkdir()
    return ck


def _unchanged(ck: Path):
    return all((ck/f).read_text() == 'original\n' for f in ('Makefile', 'memlm/cli.py', 'nbs/10_span_buffer.ipynb'))


def test_members_outside_results_are_refused(checkout, tmp_path):
    src = _archive(tmp_path/'a', [('Makefile', b'pwned\n'), ('memlm/cli.py', b'pwned\n')])
    r = _unpack(checkout, src, process=True)   # the command itself
    assert r.returncode != 0 and 'not a run file' in r.stderr and 'nothing unpacked' in r.stderr, r.stderr
    assert _unchanged(checkout) and not any((checkout/'results').iterdir())


def test_a_link_member_is_refused(checkout, tmp_path):
    s = _spec(); run = f'results/smoke/awd_lstm/runs/{s.folder}'
    src = _archive(tmp_path/'a', [(f'{run}/record.json', json.dumps(_record(s)).encode()),
                                  (f'{run}/ckpt', ('link', '../../../../../memlm')),
                                  (f'__ckpt__/smoke/awd_lstm/runs/{s.folder}/ckpt/cli.py', b'pwned\n'),
                                  (f'__ckpt__/smoke/awd_lstm/runs/{s.folder}/../../../../nbs/weights.fp16.pt', b'pwned\n')])
    r = _unpack(checkout, src)
    assert r.returncode != 0 and 'not a regular file' in r.stderr, r.stderr
    assert _unchanged(checkout) and not any((checkout/'results').iterdir())


def test_weights_through_an_existing_link_are_refused(checkout, tmp_path):
    s = _spec(); outside = tmp_path/'outside'; (outside/'train').mkdir(parents=True)
    (outside/'train'/'weights.fp16.pt').write_text('original\n')
    d = checkout/'results'/'smoke'/'awd_lstm'/'runs'/s.folder; d.mkdir(parents=True)
    (d/'ckpt').symlink_to(outside)                                    # a link already in the checkout, leading out of it
    src = _archive(tmp_path/'a', [(f'results/smoke/awd_lstm/runs/{s.folder}/record.json', json.dumps(_record(s)).encode()),
                                  (f'__ckpt__/smoke/awd_lstm/runs/{s.folder}/train/weights.fp16.pt', b'pwned\n')])
    r = _unpack(checkout, src)
    assert r.returncode != 0 and 'leads outside' in r.stderr, r.stderr
    assert (outside/'train'/'weights.fp16.pt').read_text() == 'original\n' and not (d/'record.json').exists()


def test_a_record_link_in_the_run_folder_is_replaced_not_followed(checkout, tmp_path):
    s = _spec(); target = tmp_path/'elsewhere.json'; target.write_text('original\n')
    d = checkout/'results'/'smoke'/'awd_lstm'/'runs'/s.folder; d.mkdir(parents=True)
    (d/'record.json').symlink_to(target)
    src = _archive(tmp_path/'a', [(f'results/smoke/awd_lstm/runs/{s.folder}/record.json', json.dumps(_record(s)).encode())])
    r = _unpack(checkout, src)
    assert r.returncode == 0 and '1 run records unpacked' in r.stdout, r.stderr
    assert target.read_text() == 'original\n' and not (d/'record.json').is_symlink()
    assert json.loads((d/'record.json').read_text())['key'] == s.key


@pytest.mark.parametrize('change,message', [
    (dict(config={'_type': 'AWDExp'}), "a config that is not the plan's"),
    (dict(seed=1), 'seed 1, not 0'),
    (dict(provenance={'device': 'cpu (x86_64, 1 threads)'}), 'not on a NVIDIA device')], ids=['config', 'seed', 'device'])
def test_a_record_that_is_not_its_folders_run_is_refused(checkout, tmp_path, change, message):
    s = _spec()
    src = _archive(tmp_path/'a', [(f'results/smoke/awd_lstm/runs/{s.folder}/record.json', json.dumps(_record(s, **change)).encode())])
    r = _unpack(checkout, src)
    assert r.returncode != 0 and message in r.stderr, r.stderr
    assert not any((checkout/'results').iterdir())


def test_an_archive_without_a_record_is_refused(checkout, tmp_path):
    s = _spec()
    src = _archive(tmp_path/'a', [(f'results/smoke/awd_lstm/runs/{s.folder}/train.log.jsonl', b'{}\n')])
    r = _unpack(checkout, src)
    assert r.returncode != 0 and 'no run record' in r.stderr, r.stderr


def test_a_good_archive_lands_in_its_run_folder(checkout, tmp_path):
    s = _spec(); run = f'smoke/awd_lstm/runs/{s.folder}'
    src = _archive(tmp_path/'a', [(f'results/{run}/record.json', json.dumps(_record(s)).encode()), (f'results/{run}/train.log.jsonl', b'{}\n'),
                                  (f'__ckpt__/{run}/train/weights.fp16.pt', b'w')])
    r = _unpack(checkout, src, process=True)   # the command itself
    assert r.returncode == 0, r.stderr
    d = checkout/'results'/run
    assert (d/'train.log.jsonl').exists() and (d/'ckpt'/'train'/'weights.fp16.pt').read_bytes() == b'w' and _unchanged(checkout)
