"""Tests of memlm.data: real-corpus counts (skipped when the files are absent), offline download logic, readers, generators."""
import hashlib, io, math, random, shutil, tarfile, time, zipfile
from collections import Counter
from pathlib import Path

import pytest
import torch

import memlm.data as D
from memlm.data import (SOURCES, SPLITS, ChecksumError, DataNotFoundError, Source, Vocab, batchify, bptt_batches,
                        data_dir, ensure_corpus, has_corpus, iob1_to_bioes, iob1_to_iob2, load_corpus, number_prediction,
                        read_cbt, read_conll2003, read_imdb, repo_root, split_articles, synthetic_corpus)

torch.set_num_threads(1)


# ---------------------------------------------------------------- real corpora
def real_root(name):
    "The first of $MEMLM_DATA / <repo>/data and <repo>/../shared/data (what .ci/run uses) that holds `name`."
    for root in (data_dir(), repo_root().parent/'shared'/'data'):
        if has_corpus(name, root): return root
    pytest.skip(f'{name} not found in {data_dir()} or {repo_root().parent/"shared"/"data"}: set $MEMLM_DATA to a folder holding '
                f'{SOURCES[name].folder}/ to run this test')


def test_ptb_counts():
    c = load_corpus('ptb', real_root('ptb'))
    assert [len(c[s]) for s in SPLITS] == [929_589, 73_760, 82_430]
    assert len(c.vocab) == 10_000 and c.articles == {}
    assert c.vocab.itos[:3] == ['aer', 'banknote', 'berlitz']  # first-appearance order, as awd-lstm-lm numbers them
    assert (c.train == c.vocab.stoi['<eos>']).sum() == 42_068  # one <eos> per line


def test_wikitext2_counts_and_articles():
    t0 = time.perf_counter()
    c = load_corpus('wikitext-2', real_root('wikitext-2'))
    print(f'WikiText-2 loaded and verified in {time.perf_counter() - t0:.2f} s')
    assert [len(c[s]) for s in SPLITS] == [2_088_628, 217_646, 245_569]
    assert len(c.vocab) == 33_278 and c.vocab.itos[0] == '<eos>'
    assert [len(c.articles[s]) for s in SPLITS] == [600, 60, 60]
    for s in SPLITS:
        starts = c.articles[s]
        assert starts[0] == 1 and (starts[1:] > starts[:-1]).all()  # after the file's leading blank line
        heads = c.train if s == 'train' else c[s]
        eq = c.vocab.stoi['=']
        assert (heads[starts] == eq).all() and (heads[starts + 1] != eq).all()
        pieces = split_articles(c[s], starts)
        assert len(pieces) == len(starts) and torch.equal(torch.cat(pieces), c[s])


def test_conll2003_counts():
    folder = ensure_corpus('conll2003', real_root('conll2003'))
    want = {'eng.train': (14_041, 203_621, 946, dict(LOC=7140, MISC=3438, ORG=6321, PER=6600)),
            'eng.testa': (3_250, 51_362, 216, dict(LOC=1837, MISC=922, ORG=1341, PER=1842)),
            'eng.testb': (3_453, 46_435, 231, dict(LOC=1668, MISC=702, ORG=1661, PER=1617))}
    for fname, (n_sents, n_tokens, n_docs, ents) in want.items():
        sents = read_conll2003(folder/fname)
        assert len(sents) == n_sents and sum(len(s['words']) for s in sents) == n_tokens
        assert sents[-1]['doc'] == n_docs - 1
        bioes = [iob1_to_bioes(s['ner']) for s in sents]
        assert dict(Counter(t[2:] for b in bioes for t in b if t[:2] in ('B-', 'S-'))) == ents


@pytest.mark.parametrize('name,fname', [('ptb', 'ptb.valid.txt'), ('wikitext-2', 'wiki.test.tokens'), ('conll2003', 'eng.testa')])
def test_corrupted_copy_is_refused(tmp_path, name, fname):
    src = real_root(name)/SOURCES[name].folder
    dst = tmp_path/SOURCES[name].folder
    shutil.copytree(src, dst)
    for f in dst.iterdir(): f.chmod(0o644)  # the shared copy is read-only
    b = bytearray((dst/fname).read_bytes()); b[len(b) // 2] ^= 0x01; (dst/fname).write_bytes(bytes(b))
    load = (lambda **kw: load_corpus(name, tmp_path, **kw)) if name != 'conll2003' else (lambda **kw: ensure_corpus(name, tmp_path, **kw))
    with pytest.raises(ChecksumError, match=fname) as e: load()
    assert SOURCES[name].files[fname] in str(e.value)  # the expected checksum, next to the one found
    load(verify=False)  # the explicit opt-out


# ---------------------------------------------------------------- data_dir
def test_data_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv('MEMLM_DATA', raising=False)
    assert data_dir() == repo_root()/'data'
    monkeypatch.setenv('MEMLM_DATA', str(tmp_path))
    assert data_dir() == tmp_path
    assert data_dir(tmp_path/'x') == tmp_path/'x'


# ---------------------------------------------------------------- downloads (offline, file:// fixtures)
TOY = {'toy.train.txt': ' a b c \n b c \n', 'toy.valid.txt': ' a b \n', 'toy.test.txt': ' c \n'}
SUMS = {n: hashlib.sha256(t.encode()).hexdigest() for n, t in TOY.items()}


@pytest.fixture
def archives(tmp_path):
    "A tgz and a zip holding toy/data/toy.*.txt."
    src = tmp_path/'src'/'toy'/'data'; src.mkdir(parents=True)
    for n, t in TOY.items(): (src/n).write_text(t)
    with tarfile.open(tmp_path/'toy.tgz', 'w:gz') as t: t.add(tmp_path/'src'/'toy', arcname='./toy')
    with zipfile.ZipFile(tmp_path/'toy.zip', 'w') as z:
        for n, t in TOY.items(): z.writestr(f'toy/data/{n}', t)
    return tmp_path


def use_source(monkeypatch, urls, files=SUMS):
    monkeypatch.setitem(SOURCES, 'toy', Source('toy', dict(files), tuple(urls), 'toy/data/'))


def leftovers(folder):
    return sorted(p.name for p in folder.rglob('*')) if folder.exists() else []


@pytest.mark.parametrize('arc', ['toy.tgz', 'toy.zip'])
def test_download_and_verify(archives, monkeypatch, arc):
    use_source(monkeypatch, [(archives/arc).as_uri()])
    folder = ensure_corpus('toy', archives/'data')
    assert leftovers(folder) == sorted(TOY)
    assert all((folder/n).read_text() == t for n, t in TOY.items())


def test_download_only_missing_files(archives, monkeypatch):
    use_source(monkeypatch, [(archives/'toy.zip').as_uri()])
    folder = archives/'data'/'toy'; folder.mkdir(parents=True)
    (folder/'toy.train.txt').write_text(TOY['toy.train.txt'])
    ensure_corpus('toy', archives/'data')
    assert leftovers(folder) == sorted(TOY)
    (folder/'toy.test.txt').unlink(); (folder/'toy.train.txt').write_text('tampered\n')
    with pytest.raises(ChecksumError, match='toy.train.txt'): ensure_corpus('toy', archives/'data')
    assert (folder/'toy.test.txt').exists()  # the missing file was fetched before the bad one was reported


def test_mirror_fallback(archives, monkeypatch):
    use_source(monkeypatch, ['http://127.0.0.1:9/toy.zip', (archives/'toy.tgz').as_uri()])
    assert leftovers(ensure_corpus('toy', archives/'data')) == sorted(TOY)


def test_bad_checksum_leaves_nothing(archives, monkeypatch):
    use_source(monkeypatch, [(archives/'toy.tgz').as_uri()], {**SUMS, 'toy.valid.txt': '0' * 64})
    with pytest.raises(ChecksumError) as e: ensure_corpus('toy', archives/'data')
    assert 'toy.valid.txt' in str(e.value) and '0' * 64 in str(e.value) and SUMS['toy.valid.txt'] in str(e.value)
    assert leftovers(archives/'data'/'toy') == []  # not even the two good files


def test_truncated_archive_leaves_nothing(archives, monkeypatch):
    for arc in ('toy.tgz', 'toy.zip'):
        data = (archives/arc).read_bytes()
        (archives/('cut-' + arc)).write_bytes(data[:len(data) // 2])
        use_source(monkeypatch, [(archives/('cut-' + arc)).as_uri()])
        with pytest.raises(DataNotFoundError, match='expected file'): ensure_corpus('toy', archives/'data')
        assert leftovers(archives/'data'/'toy') == []


class Flaky:
    "A urlopen response that announces `total` bytes, sends `sent`, then fails with `exc` (or just ends)."
    def __init__(self, total, sent, exc=None): self.headers, self.left, self.exc = {'Content-Length': str(total)}, sent, exc
    def __enter__(self): return self
    def __exit__(self, *a): return False
    def read(self, n):
        if self.left > 0: k = min(n, self.left, 7); self.left -= k; return b'x' * k
        if self.exc: raise self.exc
        return b''


@pytest.mark.parametrize('exc,err', [(ConnectionResetError('connection reset by peer'), DataNotFoundError),
                                     (None, DataNotFoundError),  # ends early: fewer bytes than announced
                                     (KeyboardInterrupt(), KeyboardInterrupt)])
def test_interrupted_download_leaves_nothing(tmp_path, monkeypatch, exc, err):
    use_source(monkeypatch, ['http://example.invalid/toy.zip'])
    monkeypatch.setattr(D.urllib.request, 'urlopen', lambda req, timeout=None: Flaky(1000, 100, exc))
    with pytest.raises(err) as e: ensure_corpus('toy', tmp_path)
    if exc is None: assert 'incomplete download' in str(e.value)
    assert leftovers(tmp_path/'toy') == []


def test_no_network_one_clear_error(tmp_path, monkeypatch):
    src = SOURCES['ptb']
    monkeypatch.setitem(SOURCES, 'ptb', Source(src.folder, src.files, ('http://127.0.0.1:9/simple-examples.tgz',), src.member))
    with pytest.raises(DataNotFoundError) as e: load_corpus('ptb', tmp_path)
    msg = str(e.value)
    for s in ('ptb.train.txt', 'ptb.valid.txt', 'ptb.test.txt', str(tmp_path/'ptb'), '$MEMLM_DATA', 'Connection refused'): assert s in msg
    assert leftovers(tmp_path/'ptb') == []


def test_not_downloadable_and_unknown(tmp_path):
    with pytest.raises(DataNotFoundError, match='cannot be downloaded') as e: ensure_corpus('conll2003', tmp_path)
    assert 'eng.testb' in str(e.value)
    with pytest.raises(ValueError, match='unknown data set'): ensure_corpus('nope')
    with pytest.raises(ValueError, match='not a language-modelling corpus'): load_corpus('conll2003')


def test_source_table_urls():
    assert SOURCES['ptb'].urls == ('http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz',)
    assert SOURCES['wikitext-2'].urls[0].endswith('research.metamind.io/wikitext/wikitext-2-v1.zip')
    assert SOURCES['wikitext-103'].urls[0].endswith('research.metamind.io/wikitext/wikitext-103-v1.zip')
    assert all(h is None for h in SOURCES['wikitext-103'].files.values())  # checksum unknown: not verified
    assert SOURCES['conll2003'].urls == ()
    shared = repo_root().parent/'shared'/'data'/'SHA256SUMS'
    if shared.exists():  # the table's checksums are the canonical ones
        canon = dict(reversed(l.split()) for l in shared.read_text().splitlines() if l.strip())
        ours = {f'{s.folder}/{f}': h for s in SOURCES.values() for f, h in s.files.items() if h}
        assert ours == canon


# ---------------------------------------------------------------- LM corpora from fixture files
def test_load_wikitext_fixture(tmp_path):
    folder = tmp_path/'wikitext-103'; folder.mkdir()
    (folder/'wiki.train.tokens').write_text(' \n = A = \n \n x y \n = = S = = \n \n z \n \n = B = \n \n y <unk> \n')
    (folder/'wiki.valid.tokens').write_text(' \n = C = \n \n x q \n')
    (folder/'wiki.test.tokens').write_text(' z \n')
    c = load_corpus('wikitext-103', tmp_path)  # no checksum known: loads unverified
    assert c.articles['train'].tolist() == [1, 19] and c.articles['valid'].tolist() == [1] and c.articles['test'].tolist() == []
    assert c.vocab.decode(c.valid) == ['<eos>', '=', '<unk>', '=', '<eos>', '<eos>', 'x', '<unk>', '<eos>']  # 'C', 'q' unseen in train
    assert len(c.train) == 27


# ---------------------------------------------------------------- batching
def test_batchify_and_windows():
    src = batchify(torch.arange(103), 4)
    assert src.shape == (25, 4) and src[:, 1].tolist() == list(range(25, 50))
    wins = list(bptt_batches(src, 7))
    assert [len(x) for x, _ in wins] == [7, 7, 7, 3]
    assert torch.equal(torch.cat([y for _, y in wins]), src[1:]) and torch.equal(torch.cat([x for x, _ in wins]), src[:-1])


def test_variable_bptt_rule_and_determinism():
    src = batchify(torch.arange(300_000), 1)
    lens = [len(x) for x, _ in bptt_batches(src, 70, variable=True, gen=torch.Generator().manual_seed(5))]
    assert sum(lens) == 299_999 and min(lens[:-1]) >= 5
    assert lens == [len(x) for x, _ in bptt_batches(src, 70, variable=True, gen=torch.Generator().manual_seed(5))]
    assert lens != [len(x) for x, _ in bptt_batches(src, 70, variable=True, gen=torch.Generator().manual_seed(6))]
    # the same draws with numpy-free re-implementation of awd-lstm-lm's rule
    g, i, ref = torch.Generator().manual_seed(5), 0, []
    while i < 299_999:
        bptt = 70 if torch.rand((), generator=g).item() < 0.95 else 35
        l = min(max(5, int(bptt + 5 * torch.randn((), generator=g).item())), 299_999 - i)
        ref.append(l); i += l
    assert lens == ref
    short = [l for l in lens[:-1] if l < 52]
    assert abs(len(short) / len(lens) - 0.05) < 0.012 and abs(sum(short) / len(short) - 34.5) < 1
    assert max(len(x) for x, _ in bptt_batches(src, 10, variable=True, max_len=12)) == 12
    assert [len(x) for x, _ in bptt_batches(batchify(torch.arange(8), 1), 70, variable=True)] == [7]  # capped at the data


def test_resume_mid_epoch():
    src = batchify(torch.arange(5000), 3)
    full = list(bptt_batches(src, 25, variable=True, gen=torch.Generator().manual_seed(2)))
    g = torch.Generator().manual_seed(2); it = bptt_batches(src, 25, variable=True, gen=g)
    head = [next(it) for _ in range(4)]
    state, offset = g.get_state(), sum(len(x) for x, _ in head)
    g2 = torch.Generator(); g2.set_state(state)
    rest = list(bptt_batches(src, 25, variable=True, gen=g2, start=offset))
    assert len(head) + len(rest) == len(full)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(head + rest, full))
    assert [len(x) for x, _ in bptt_batches(src, 25, start=len(src) - 3)] == [2]


# ---------------------------------------------------------------- readers
def test_read_conll2003(tmp_path):
    f = tmp_path/'eng.x'
    f.write_text('-DOCSTART- -X- -X- O\n\nSOCCER NN B-NP O\n- : O O\nJAPAN NNP B-NP I-LOC\n\n'
                 'Nadim NNP B-NP I-PER\nLadki NNP I-NP I-PER\n\n-DOCSTART- -X- -X- O\n\nAL-AIN NNP B-NP I-LOC\n\n')
    s = read_conll2003(f)
    assert [x['words'] for x in s] == [['SOCCER', '-', 'JAPAN'], ['Nadim', 'Ladki'], ['AL-AIN']]
    assert s[0]['pos'] == ['NN', ':', 'NNP'] and s[0]['chunk'] == ['B-NP', 'O', 'B-NP'] and s[1]['ner'] == ['I-PER', 'I-PER']
    assert [x['doc'] for x in s] == [0, 0, 1]
    (tmp_path/'bad').write_text('a b c\n')
    with pytest.raises(ValueError, match='expected 4 columns'): read_conll2003(tmp_path/'bad')


def test_iob1_to_bioes_tricky():
    assert iob1_to_bioes(['I-LOC']) == ['S-LOC']
    assert iob1_to_bioes(['O', 'I-PER', 'I-PER', 'I-PER', 'O']) == ['O', 'B-PER', 'I-PER', 'E-PER', 'O']
    assert iob1_to_bioes(['I-PER', 'B-PER']) == ['S-PER', 'S-PER']  # two adjacent PER entities
    assert iob1_to_bioes(['I-PER', 'I-PER', 'B-PER', 'I-PER']) == ['B-PER', 'E-PER', 'B-PER', 'E-PER']
    assert iob1_to_bioes(['I-ORG', 'I-MISC']) == ['S-ORG', 'S-MISC']  # type change without B-
    assert iob1_to_bioes(['B-LOC', 'I-LOC', 'O']) == ['B-LOC', 'E-LOC', 'O']  # stray B- at the start
    assert iob1_to_iob2(['O', 'I-X', 'I-X', 'I-Y', 'B-Y']) == ['O', 'B-X', 'I-X', 'B-Y', 'B-Y']


def _spans(bioes):
    out, start = [], None
    for i, t in enumerate(bioes):
        if t[:2] == 'S-': out.append((t[2:], i, i))
        elif t[:2] == 'B-': start = i
        elif t[:2] == 'E-': out.append((t[2:], start, i))
    return out


def test_iob1_to_bioes_matches_seqeval():
    seqeval = pytest.importorskip('seqeval.metrics.sequence_labeling')
    rng = random.Random(0)
    for _ in range(500):
        tags = [rng.choice(['O', 'O', 'I-PER', 'I-LOC', 'B-PER', 'B-LOC']) for _ in range(rng.randint(0, 12))]
        bioes = iob1_to_bioes(tags)
        assert len(bioes) == len(tags)
        assert sorted(_spans(bioes)) == sorted(seqeval.get_entities(tags))  # seqeval's chunking reads IOB1 leniently


def test_read_imdb(tmp_path):
    root = tmp_path/'aclImdb'
    for split in ('train', 'test'):
        for sub in ('pos', 'neg'): (root/split/sub).mkdir(parents=True)
    (root/'train'/'pos'/'11_10.txt').write_text('Loved it!<br /><br />A <i>classic</i>.')
    (root/'train'/'pos'/'3_7.txt').write_text("It's good")
    (root/'train'/'neg'/'5_1.txt').write_text('Awful.')
    (root/'train'/'unsup').mkdir(); (root/'train'/'unsup'/'0_0.txt').write_text('ignored')
    r = read_imdb(tmp_path, 'train')
    assert [(x['label'], x['id'], x['rating']) for x in r] == [(0, '5', 1), (1, '3', 7), (1, '11', 10)]
    assert r[2]['tokens'] == ['loved', 'it', '!', 'a', '<', 'i', '>', 'classic', '<', '/', 'i', '>', '.']
    assert r[1]['tokens'] == ["it's", 'good']
    assert read_imdb(root, 'test') == []
    with pytest.raises(DataNotFoundError, match='aclImdb_v1.tar.gz'): read_imdb(tmp_path/'nowhere', 'train')


def test_read_cbt(tmp_path):
    ctx = [f'{i} w{i} .' for i in range(1, 21)]
    f = tmp_path/'cbt_P_test_2500ex.txt'
    f.write_text('\n'.join(ctx + ['21 he sat XXXXX the mat .\ton\t\tat|in|on|under', ''] + ctx + ['21 XXXXX .\tin\t\tin|on', '']) + '\n')
    q = read_cbt(f)
    assert len(q) == 2 and q[0]['context'] == [f'w{i} .' for i in range(1, 21)]
    assert q[0]['query'] == 'he sat XXXXX the mat .' and q[0]['answer'] == 'on' and q[0]['candidates'] == ['at', 'in', 'on', 'under']
    assert q[1]['candidates'] == ['in', 'on']
    (tmp_path/'bad.txt').write_text('1 a\n3 b\n')
    with pytest.raises(ValueError, match='expected line 2'): read_cbt(tmp_path/'bad.txt')


# ---------------------------------------------------------------- generators
def _label(seq, skips, offset=0):
    p = seq[-1]
    for _ in range(skips): p = seq[offset + p]
    return p


@pytest.mark.parametrize('length,skips', [(11, 1), (21, 2)])
def test_number_prediction(length, skips):
    x, y = number_prediction(5000, length, seed=7)
    assert x.shape == (5000, length) and y.shape == (5000,) and x.dtype == y.dtype == torch.long
    assert x.min() == 0 and x.max() == 9
    assert y.tolist() == [_label(s, skips) for s in x.tolist()]
    if skips == 2: assert all(s[s[-1]] < s[-1] for s in x.tolist())  # the second jump goes further back
    x2, y2 = number_prediction(5000, length, seed=7)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(number_prediction(5000, length, seed=8)[0], x)
    assert 0.08 < (y == 3).float().mean() < 0.12 or skips == 2


def test_number_prediction_options():
    x, y = number_prediction(3000, 21, seed=0, constraint='distinct')
    assert all(s[s[-1]] != s[-1] for s in x.tolist()) and y.tolist() == [_label(s, 2) for s in x.tolist()]
    x, y = number_prediction(3000, 21, seed=0, constraint=None)
    assert any(s[s[-1]] == s[-1] for s in x.tolist())
    x, y = number_prediction(3000, 101, seed=0, skips=1, offset=90)  # the authors' script's variant
    assert y.tolist() == [s[90 + s[-1]] for s in x.tolist()]
    with pytest.raises(ValueError): number_prediction(10, 11, 0, offset=5)
    with pytest.raises(ValueError): number_prediction(10, 11, 0, constraint='forward')


def test_synthetic_corpus_structure_and_speed():
    t0 = time.perf_counter(); c = synthetic_corpus(); dt = time.perf_counter() - t0
    assert dt < 1, dt
    assert [len(c[s]) for s in SPLITS] == [100_000, 10_000, 10_000] and len(c.vocab) == 64
    d, toks = c.meta['d'], c.train.tolist()
    trig = [i for i, t in enumerate(toks) if c.vocab.itos[t].startswith('T') and i + d < len(toks)]
    assert 0.03 < len(trig) / len(toks) < 0.07
    assert all(c.vocab.itos[toks[i + d]] == 'R' + c.vocab.itos[toks[i]][1:] for i in trig)
    assert all(c.vocab.itos[toks[i - d]] == 'T' + c.vocab.itos[t][1:] for i, t in enumerate(toks) if c.vocab.itos[t].startswith('R'))
    for s in ('valid', 'test'):
        o, sh, bi = (c.meta[k][s] for k in ('oracle_ppl', 'short_memory_oracle_ppl', 'bigram_ppl'))
        assert o < sh < bi
    assert torch.equal(synthetic_corpus(seed=1).valid, synthetic_corpus(seed=1).valid)
    assert not torch.equal(synthetic_corpus(seed=1).valid, c.valid)


def test_synthetic_oracle_is_the_entropy_rate():
    p, K = 0.1, 4
    c = synthetic_corpus(n_train=200_000, vocab_size=40, n_triggers=K, p_trigger=p, d=5, steps=(0.7, 0.3), seed=3)
    hd = -(0.7 * math.log(0.7) + 0.3 * math.log(0.3))
    H = (1 - p / (1 + p)) * (-p * math.log(p) - (1 - p) * math.log(1 - p) + p * math.log(K) + (1 - p) * hd)
    assert abs(math.log(c.meta['oracle_ppl']['train']) - H) < 0.01


def test_synthetic_articles():
    c = synthetic_corpus(n_train=5_000, n_valid=1_200, n_test=1_000, article_len=400, d=6)
    assert c.articles['valid'].tolist() == [0, 400, 800] and len(c.valid) == 1_200
    title = c.vocab.stoi['=']
    assert (c.train == title).sum() == len(c.articles['train']) and (c.train[c.articles['train']] == title).all()
    for art in split_articles(c.train, c.articles['train']):  # no dependency crosses an article boundary
        toks = [c.vocab.itos[t] for t in art.tolist()]
        assert all(toks[i - 6][0] == 'T' for i, t in enumerate(toks) if t[0] == 'R' and i >= 6)
        assert all(t[0] != 'R' for t in toks[:7])


def test_load_corpus_synthetic_default():
    assert torch.equal(load_corpus('synthetic').train, synthetic_corpus().train)


def test_vocab():
    v = Vocab(['<unk>', 'a', 'b'])
    assert v.encode(['b', 'zzz']).tolist() == [2, 0] and v.decode([1, 2]) == ['a', 'b'] and len(v) == 3 and 'a' in v
    with pytest.raises(KeyError, match='not in the vocabulary'): Vocab(['a']).encode(['b'])
    with pytest.raises(AssertionError): Vocab(['a', 'a'])
