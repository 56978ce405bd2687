"""llama.cpp backend (llama-cpp-python): GGUF models on CPU (or GPU offload), with the vision
projector (mmproj) for Qwen3-VL GGUF through llama.cpp's multimodal (mtmd) chat handler.

Text chats run our own token loop over ``Llama.generate`` (prompt rendered from the GGUF's chat
template), which keeps per-token overhead to one incremental UTF-8 decode; image chats go
through ``create_chat_completion`` with the mtmd handler.
"""

from __future__ import annotations

import codecs
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.runtime.engine.base import (
    Engine,
    EngineError,
    GenerationSettings,
    Messages,
    NextTokenScores,
    Tools,
    UnsupportedSetting,
)
from localqwen.runtime.engine.messages import StopScanner, has_images, to_openai_messages
from localqwen.runtime.engine.streaming import ChunkStream, chat_result

if TYPE_CHECKING:
    from localqwen.runtime.plan import Plan
    from localqwen.vocabulary.cancel import CancelToken

TEMPLATES = Path(__file__).parent
QWEN_TEMPLATE = Path(__file__).parents[2] / "testing" / "qwen_chat_template.jinja"


def fallback_template(architecture: str) -> str | None:
    """A chat template for GGUF files that do not carry one, by model family."""
    if architecture.startswith("gemma"):
        return (TEMPLATES / "gemma_chat_template.jinja").read_text(encoding="utf-8")
    if architecture.startswith("qwen"):
        return QWEN_TEMPLATE.read_text(encoding="utf-8")
    return None


class LlamaCppEngine(Engine):
    backend = "llama.cpp"
    supports_structured_output = True  # a grammar masks every token that would break the schema
    supports_next_token_scores = True  # the last position's logits after one prompt evaluation

    def __init__(self, gguf: str | Path, *, model_id: str = "", mmproj: str | Path | None = None,
                 plan: Plan | None = None, n_ctx: int = 4096, n_threads: int | None = None,
                 n_gpu_layers: int = 0, chat_template: str | None = None) -> None:
        super().__init__()
        from localqwen.runtime.model_files import check_gguf

        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise EngineError(
                "the llama.cpp backend needs llama-cpp-python: pip install 'localqwen[llama]'"
            ) from exc
        self.path = Path(gguf)
        check_gguf(self.path)
        self.model_id = model_id or self.path.stem
        self.plan = plan
        handler = None
        if mmproj is not None:
            from llama_cpp.llama_chat_format import MTMDChatHandler

            check_gguf(Path(mmproj))
            handler = MTMDChatHandler(clip_model_path=str(mmproj), verbose=False, use_gpu=n_gpu_layers != 0)
        self.supports_images = handler is not None
        self.llm = Llama(
            model_path=str(self.path),
            n_ctx=n_ctx,
            n_threads=n_threads or physical_cores(),
            n_gpu_layers=n_gpu_layers,
            chat_handler=handler,
            verbose=False,
        )
        metadata = self.llm.metadata
        architecture = metadata.get("general.architecture", "")
        self.chat_template = (
            chat_template or metadata.get("tokenizer.chat_template") or fallback_template(architecture)
        )
        if not self.chat_template:
            raise EngineError(f"{self.path} has no chat template and {architecture!r} has no built-in one")
        self._template = _compile(self.chat_template)
        self._bos = self._piece(self.llm.token_bos())
        self._eos = self._piece(self.llm.token_eos())
        self._lock = threading.Lock()

    def _piece(self, token: int) -> str:
        if token < 0:
            return ""
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="ignore")

    def render(self, messages: Messages, tools: Tools | None = None) -> str:
        return self._template.render(
            messages=messages, tools=tools, add_generation_prompt=True,
            bos_token=self._bos, eos_token=self._eos, raise_exception=_raise,
        )

    def _tokens(self, prompt: str) -> list[int]:
        # The rendered prompt already holds BOS where the template wants it.
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def count_tokens(self, messages: Messages, tools: Tools | None = None) -> int:
        return len(self._tokens(self.render(messages, tools)))

    def next_token_logprobs(self, messages: Messages, continuations: list[str], *,
                            tools: Tools | None = None) -> NextTokenScores:
        """Evaluate the whole prompt once and read the log-softmax of the last position's logits at
        each continuation's first token. No cached prefix is reused: a prefix reuse splits the
        evaluation into other batches, which moves the scores in their third decimal, and the same
        prompt must always score the same."""
        import numpy as np

        from localqwen.runtime.engine.messages import check_messages

        self.ensure_open()
        check_messages(messages, allow_images=False, model_id=self.model_id)
        if has_images(messages):
            raise UnsupportedSetting("next-token scores are for text chats; the vision projector path cannot give them")
        firsts = [self._first_token(text) for text in continuations]
        prompt = self._tokens(self.render(messages, tools))
        if len(prompt) >= self.llm.n_ctx():
            raise EngineError(f"the prompt has {len(prompt)} tokens; the context holds {self.llm.n_ctx()}")
        with self._lock:
            llm = self.llm
            llm.reset()
            llm.eval(prompt)
            logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).astype(np.float64)
        top = logits.max()
        log_total = top + np.log(np.exp(logits - top).sum())
        return NextTokenScores(firsts, [float(logits[token] - log_total) for token in firsts], len(prompt))

    def _first_token(self, text: str) -> int:
        tokens = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False) if text else []
        if not tokens:
            raise ValueError(f"a continuation to score must have at least one token; got {text!r}")
        return int(tokens[0])

    def _stream(self, messages: Messages, tools: Tools | None, settings: GenerationSettings,
                cancel: CancelToken | None) -> Iterator[str]:
        with self._lock:
            if has_images(messages):
                yield from self._stream_multimodal(messages, tools, settings, cancel)
            else:
                yield from self._stream_text(messages, tools, settings, cancel)

    def _stream_text(self, messages: Messages, tools: Tools | None, settings: GenerationSettings,
                     cancel: CancelToken | None) -> Iterator[str]:
        import llama_cpp

        prompt = self._tokens(self.render(messages, tools))
        room = self.llm.n_ctx() - len(prompt)
        if room <= 0:
            raise EngineError(f"the prompt has {len(prompt)} tokens; the context holds {self.llm.n_ctx()}")
        if settings.seed is not None:
            self.llm.set_seed(settings.seed)
        vocab = self.llm._model.vocab
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        scanner = StopScanner(settings.stop)
        completion = 0
        reason = "length"
        limit = min(settings.max_new_tokens, room)
        for token in self.llm.generate(
            prompt, top_k=settings.top_k if not settings.greedy else 1, top_p=settings.top_p, min_p=0.0,
            temp=settings.temperature, repeat_penalty=settings.repetition_penalty, reset=True,
            grammar=compile_grammar(settings, vocab),
        ):
            completion += 1
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                reason = "stop"
                break
            shown = scanner.feed(decoder.decode(self.llm.detokenize([token])))
            if shown:
                yield shown
            if scanner.stopped:
                reason = "stop"
                break
            if cancel is not None and cancel.cancelled:
                reason = "cancelled"
                break
            if completion >= limit:
                break
        tail = scanner.feed(decoder.decode(b"", final=True)) + scanner.finish()
        if tail:
            yield tail
        self.last_result = chat_result(scanner.text, len(prompt), completion, reason)

    def _stream_multimodal(self, messages: Messages, tools: Tools | None, settings: GenerationSettings,
                           cancel: CancelToken | None) -> Iterator[str]:
        if not self.supports_images:
            raise EngineError(f"{self.model_id} was loaded without a vision projector (mmproj)")
        stream = ChunkStream(settings.stop, default_reason="length")
        chunks = self.llm.create_chat_completion(
            messages=to_openai_messages(messages), tools=tools, stream=True,
            max_tokens=settings.max_new_tokens, temperature=settings.temperature, top_p=settings.top_p,
            top_k=settings.top_k if not settings.greedy else 1, min_p=0.0,
            repeat_penalty=settings.repetition_penalty, seed=settings.seed, grammar=compile_grammar(settings, self.llm._model.vocab),
        )
        yield from stream.read(chunks, cancel)
        # llama-cpp-python streams one token per chunk and reports no usage while streaming.
        completion = stream.text_chunks
        self.last_result = stream.result(max(self.llm.n_tokens - completion, 0), completion)

    def close(self) -> None:
        super().close()
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            llm.close()


def physical_cores() -> int:
    """Decode threads: one per physical core, as llama.cpp advises. llama-cpp-python guesses
    ``cpu_count() // 2`` (two hyperthreads per core), which on a 2-vCPU machine without SMT
    decodes on one core of two."""
    try:
        import psutil

        cores = psutil.cpu_count(logical=False)
    except ImportError:
        cores = None
    return max(1, cores or (os.cpu_count() or 2) // 2)


def compile_grammar(settings: GenerationSettings, vocab: Any) -> Any:
    """llama.cpp's grammar for the settings' JSON schema or GBNF text; None when unconstrained.

    llama-cpp-python parses a grammar only when it builds the sampler, and a grammar that does not
    parse there crashes the process (a NULL sampler is used). So the text is first parsed here with
    llama.cpp's own parser on this model's vocabulary, and a bad one is an EngineError instead."""
    if not settings.constrained:
        return None
    import json

    import llama_cpp
    from llama_cpp import LlamaGrammar
    from llama_cpp.llama_grammar import LLAMA_GRAMMAR_DEFAULT_ROOT, json_schema_to_gbnf

    what = "JSON schema" if settings.json_schema is not None else "grammar"
    try:
        text = json_schema_to_gbnf(json.dumps(settings.json_schema)) if settings.json_schema is not None \
            else str(settings.grammar)
    except Exception as exc:  # noqa: BLE001 - the converter raises ValueError/KeyError/TypeError
        raise EngineError(f"llama.cpp cannot use this {what}: {type(exc).__name__}: {exc}") from None
    probe = llama_cpp.llama_sampler_init_grammar(vocab, text.encode("utf-8"), LLAMA_GRAMMAR_DEFAULT_ROOT.encode())
    if not probe:
        raise EngineError(f"llama.cpp cannot use this {what}: it does not parse as a GBNF grammar "
                          f"with a '{LLAMA_GRAMMAR_DEFAULT_ROOT}' rule")
    llama_cpp.llama_sampler_free(probe)
    return LlamaGrammar.from_string(text, verbose=False)


def _raise(message: str) -> None:
    raise ValueError(message)


def _compile(template: str) -> Any:
    """Compile a chat template the way transformers and llama-cpp-python do (sandboxed jinja)."""
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[Jinja2ChatFormatter.IgnoreGenerationTags, jinja2.ext.loopcontrols],
    )
    environment.filters["tojson"] = Jinja2ChatFormatter.tojson
    return environment.from_string(template)
