"""memlm.data on the real corpora: published counts, refusal of a corrupted copy, the checksum table against the
canonical SHA256SUMS (skipped when the files are absent). Everything that runs on fixtures is tested in nbs/00_data.ipynb
(memlm.data) and nbs/00a_corpora.ipynb (memlm.corpora: the task readers, generators and fixtures)."""
import shutil, time
from collections import Counter

import pytest
import torch

from memlm.data import SOURCES, SPLITS, ChecksumError, data_dir, ensure_corpus, has_corpus, load_corpus, repo_root, split_articles

from memlm.corpora import iob1_to_bioes, read_conll2003

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


def test_conll2003_padded_steps():
    "The NER gpu estimate's padded steps an epoch (`memlm.dynamic_skip_runs.CONLL_PADDED_STEPS`): eng.train's iid batches, as `BatchTask` draws them."
    from memlm.dynamic_skip_runs import CONLL_PADDED_STEPS
    lengths = torch.tensor([len(s['words']) for s in read_conll2003(ensure_corpus('conll2003', real_root('conll2003'))/'eng.train')])
    for bs, want in CONLL_PADDED_STEPS.items():
        epochs = [torch.randperm(len(lengths), generator=torch.Generator().manual_seed(i)) for i in range(10)]
        got = sum(sum(int(lengths[o[j:j + bs]].max()) for j in range(0, len(o), bs)) for o in epochs) / len(epochs)
        assert abs(got / want - 1) < 0.01, (bs, got, want)


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


# ---------------------------------------------------------------- the checksum table
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
