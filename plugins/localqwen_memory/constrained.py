"""Constrained output: make an engine's reply match a JSON schema, where the engine can.

llama.cpp compiles a JSON schema into a GBNF grammar that masks every token that would break it,
so even a 270M model replies with parseable JSON. The engine base class has no such option (and
the transformers backend has no grammar sampler), so this small hook lives with its only user:
it renders the chat with the engine's own template and runs llama.cpp's ``generate`` with the
grammar, holding the engine's lock so it never interleaves with an answer being streamed.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from localqwen.runtime.engine import Engine, EngineError
from localqwen.vocabulary.cancel import CancelToken


def supports_json_schema(engine: Engine) -> bool:
    """True when :func:`chat_json` can constrain this engine's output."""
    return getattr(engine, "backend", "") == "llama.cpp" and getattr(engine, "llm", None) is not None \
        and hasattr(engine, "render")


def chat_json(engine: Engine, messages: list[dict[str, Any]], schema: dict[str, Any], *,
              max_new_tokens: int = 256, cancel: CancelToken | None = None) -> str:
    """The engine's greedy reply to ``messages``, forced to match ``schema``. A reply cut short by
    ``max_new_tokens`` may still be incomplete JSON; the caller parses it as usual."""
    if not supports_json_schema(engine):
        raise EngineError(f"{engine.model_id} ({engine.backend}) cannot constrain its output to a JSON schema")
    import llama_cpp
    from llama_cpp import LlamaGrammar

    engine.ensure_open()
    grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    llm = engine.llm  # type: ignore[attr-defined]
    # The engine's own lock: one llama.cpp context must not decode two prompts at once.
    lock = getattr(engine, "_lock", None) or contextlib.nullcontext()
    with lock:
        prompt = llm.tokenize(engine.render(messages).encode("utf-8"), add_bos=False, special=True)  # type: ignore[attr-defined]
        room = llm.n_ctx() - len(prompt)
        if room <= 0:
            raise EngineError(f"the prompt has {len(prompt)} tokens; the context holds {llm.n_ctx()}")
        vocab = llm._model.vocab
        pieces: list[bytes] = []
        for count, token in enumerate(llm.generate(prompt, top_k=1, top_p=1.0, min_p=0.0, temp=0.0,
                                                   reset=True, grammar=grammar), start=1):
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                break
            pieces.append(llm.detokenize([token]))
            if count >= min(max_new_tokens, room) or (cancel is not None and cancel.cancelled):
                break
    return b"".join(pieces).decode("utf-8", errors="replace")
