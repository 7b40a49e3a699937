"""memlm: memory-augmented neural language models on one AWD-LSTM core.

The front of the library: data, the core models, training, evaluation (dynamic evaluation included), the five papers'
models with their configs, and trained models from their run folders. The reproduction machinery (plans, records,
claims) stays importable from its own modules (`memlm.plan`, `memlm.claims`, ...) and is not part of this front.
This file is the one module not exported from a notebook: each name below is defined, documented and tested in its
notebook (`nbs/`)."""
__version__ = "0.0.1"

from .data import Corpus, load_corpus, batchify
from .models import AWDLSTM, AWDLSTMConfig, LSTMLM, LSTMLMConfig
from .train import TrainConfig, fit
from .tasks import LMTask
from .evaluate import DynEvalConfig, evaluate, dynamic_evaluate
from .span_buffer import SNBConfig, SNBTask, SpanBufferLM, snb_extra_loss
from .phrase_induction import PhraseConfig, with_phrases
from .short_attention import ShortAttnConfig, ShortAttentionLM
from .meta_dynamic import MetaConfig, MetaLearner, meta_update
from .dynamic_skip import SkipLSTM
from .experiment import load_trained

__all__ = ['Corpus', 'load_corpus', 'batchify', 'AWDLSTM', 'AWDLSTMConfig', 'LSTMLM', 'LSTMLMConfig', 'TrainConfig', 'fit',
           'LMTask', 'DynEvalConfig', 'evaluate', 'dynamic_evaluate', 'SNBConfig', 'SNBTask', 'SpanBufferLM', 'snb_extra_loss',
           'PhraseConfig', 'with_phrases', 'ShortAttnConfig', 'ShortAttentionLM', 'MetaConfig', 'MetaLearner', 'meta_update',
           'SkipLSTM', 'load_trained']
