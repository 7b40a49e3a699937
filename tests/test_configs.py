"""The method configs refuse a bad value when built, naming the field (TrainConfig and AWDLSTMConfig: nbs/02, nbs/03)."""
import pytest
from memlm.evaluate import DynEvalConfig
from memlm.phrase_induction import PhraseConfig
from memlm.span_buffer import SNBConfig


@pytest.mark.parametrize('make,says', [
    (lambda: DynEvalConfig(method='adam'), "DynEvalConfig.method = 'adam'"),
    (lambda: DynEvalConfig(lr=-1.), 'DynEvalConfig.lr = -1.0'),
    (lambda: SNBConfig(span_len=0), 'SNBConfig.span_len = 0'),
    (lambda: SNBConfig(buffer_size=-8), 'SNBConfig.buffer_size = -8'),
    (lambda: SNBConfig(eta=-1.), 'SNBConfig.eta = -1.0'),
    (lambda: PhraseConfig(alignment='foo'), "PhraseConfig.alignment = 'foo'"),
    (lambda: PhraseConfig(dropout=1.5), 'PhraseConfig.dropout = 1.5'),
    (lambda: PhraseConfig(n_neg=-1), 'PhraseConfig.n_neg = -1')])
def test_configs_refuse_bad_values(make, says):
    with pytest.raises(ValueError, match=says.replace('(', r'\(').replace('.', r'\.')): make()
