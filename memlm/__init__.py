"""memlm: memory-augmented neural language models on one AWD-LSTM core.

The front of the library: data, the core models, training, evaluation (dynamic evaluation included), the five papers'
models with their configs, and trained models from their run folders. The reproduction machinery (plans, records,
claims) stays importable from its own modules (`memlm.plan`, `memlm.claims`, ...) and is not part of this front.
This file is the one module not exported from a notebook: each name below is defined, documented and tested in its
notebook (`nbs/`)."""
__version__ = "0.0.1"
import sys, types

_FRONT = {  # name -> the module that defines it; imported on first use, so `python -m memlm.cli` and `import memlm.<module>`
             # do not pay for the whole front (torch and every paper) before they need it
    **dict.fromkeys(['Corpus', 'load_corpus', 'batchify'], 'data'),
    **dict.fromkeys(['AWDLSTM', 'AWDLSTMConfig', 'LSTMLM', 'LSTMLMConfig'], 'models'),
    **dict.fromkeys(['TrainConfig', 'fit'], 'train'),
    **dict.fromkeys(['LMTask'], 'tasks'),
    **dict.fromkeys(['DynEvalConfig', 'evaluate', 'dynamic_evaluate'], 'evaluate'),
    **dict.fromkeys(['SNBConfig', 'SNBTask', 'SpanBufferLM', 'snb_extra_loss'], 'span_buffer'),
    **dict.fromkeys(['PhraseConfig', 'with_phrases'], 'phrase_induction'),
    **dict.fromkeys(['ShortAttnConfig', 'ShortAttentionLM'], 'short_attention'),
    **dict.fromkeys(['MetaConfig', 'MetaLearner', 'meta_update'], 'meta_dynamic'),
    **dict.fromkeys(['SkipLSTM'], 'dynamic_skip'),
    **dict.fromkeys(['load_trained'], 'experiment'),
}
__all__ = list(_FRONT)

def __getattr__(name: str):
    "PEP 562: `memlm.<name>` imports the module that defines it."
    if name not in _FRONT: raise AttributeError(f"module 'memlm' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f'.{_FRONT[name]}', __name__), name)
    globals()[name] = value
    return value

def __dir__(): return sorted([*globals(), *_FRONT])

class _Front(types.ModuleType):
    "The package keeps its front names: importing the submodule `memlm.evaluate` must not replace the function `memlm.evaluate`."
    def __setattr__(self, name, value):
        if not (name in _FRONT and isinstance(value, types.ModuleType)): super().__setattr__(name, value)

sys.modules[__name__].__class__ = _Front
