"""Quiet model loads: the libraries' own chatter silenced around *our* loads only.

Loading the embedder, a cross-encoder or a chat model printed, on every RAG command, a
"Loading weights" progress bar (transformers), a FutureWarning or two (transformers /
sentence-transformers deprecations the user can do nothing about) and, on CPUs with AVX-512
BF16, bitsandbytes' "Failed to load CPU gemm_4bit_forward from kernels-community" (it tries to
fetch an optional kernel when it is first imported). None of it says anything about the user's
work. Inside :func:`quiet_loading` those loggers are raised to ERROR, transformers' and the hub's
progress bars are off, and FutureWarnings raised from those libraries are dropped; on exit
everything is put back as it was, so the user's own code (a notebook using transformers next to
LocalQwen) keeps its warnings and bars. Errors always get through.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

NOISY_LOGGERS = ("transformers", "sentence_transformers", "bitsandbytes", "huggingface_hub", "accelerate")
# Modules whose FutureWarnings are library housekeeping (regex on the warning's module).
NOISY_MODULES = r"(transformers|sentence_transformers|huggingface_hub|bitsandbytes|accelerate|torch)(\.|$)"


@contextmanager
def quiet_loading() -> Iterator[None]:
    """Silence library chatter while a model loads; restore the previous settings afterwards."""
    with ExitStack() as stack:
        for name in NOISY_LOGGERS:
            logger = logging.getLogger(name)
            stack.callback(logger.setLevel, logger.level)
            logger.setLevel(logging.ERROR)
        stack.enter_context(_no_progress_bars())
        stack.enter_context(warnings.catch_warnings())
        warnings.filterwarnings("ignore", category=FutureWarning, module=NOISY_MODULES)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=NOISY_MODULES)
        yield


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers' and huggingface_hub's bars off, then back on only if they were on."""
    import sys

    restore = []
    if "transformers" in sys.modules or _importable("transformers"):
        from transformers.utils import logging as hf_logging

        # transformers' own verbosity wins over the stdlib level for its loggers.
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        restore.append(lambda: hf_logging.set_verbosity(verbosity))
        if hf_logging.is_progress_bar_enabled():
            hf_logging.disable_progress_bar()
            restore.append(hf_logging.enable_progress_bar)
    if "huggingface_hub" in sys.modules or _importable("huggingface_hub"):
        from huggingface_hub.utils import (
            are_progress_bars_disabled,
            disable_progress_bars,
            enable_progress_bars,
        )

        if not are_progress_bars_disabled():
            disable_progress_bars()
            restore.append(enable_progress_bars)
    try:
        yield
    finally:
        for undo in reversed(restore):
            undo()


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None
