"""Transformers backend: Qwen3 (AutoModelForCausalLM) and Qwen3-VL (AutoModelForImageTextToText).

Streaming runs ``generate`` in a worker thread feeding a ``TextIteratorStreamer``; batching uses
left padding; stop strings, cancel and token counting go through one ``StoppingCriteria``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.runtime.engine.base import (
    ChatResult,
    Engine,
    EngineError,
    GenerationSettings,
    Messages,
    NextTokenScores,
    Tools,
)
from localqwen.runtime.engine.messages import StopScanner, check_messages, has_images, load_image
from localqwen.runtime.engine.streaming import chat_result

if TYPE_CHECKING:
    from localqwen.runtime.plan import Plan
    from localqwen.vocabulary.cancel import CancelToken


def load_kwargs(plan: Plan | None, *, trust_remote_code: bool = False) -> dict[str, Any]:
    """``from_pretrained`` arguments for a plan (dtype, device placement, quantization)."""
    import torch

    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code, "use_safetensors": True}
    if plan is None:
        kwargs["dtype"] = torch.float32
        return kwargs
    kwargs["dtype"] = getattr(torch, plan.dtype or "float32")
    if plan.quantization == "nf4":
        from localqwen.runtime.quantization import nf4_config

        compute = plan.compute_dtype or plan.dtype or "bfloat16"
        kwargs["quantization_config"] = nf4_config(compute, storage_dtype=compute)
        kwargs["device_map"] = "auto"
    elif plan.device in ("cuda", "mps"):
        kwargs["device_map"] = plan.device
    return kwargs


def four_bit_plan(plan: Plan | None, *, model_id: str, task: str) -> Plan:
    """``plan`` (or, with none, this machine's default) changed to load the base in 4-bit NF4.

    For a QLoRA adapter: it was trained against the NF4-rounded weights, so it runs on them again
    rather than on the full-precision ones (bitsandbytes runs NF4 on a CUDA GPU, and on a CPU since
    0.48). On a GPU the matmuls run in the plan's half precision (bf16 where supported)."""
    from dataclasses import replace

    import torch

    from localqwen.runtime.plan import Plan

    why = "a QLoRA adapter: the base loads in 4-bit NF4, the weights it was trained against"
    if torch.cuda.is_available():
        half = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        device, compute = "cuda", plan.dtype if plan is not None and plan.dtype in ("bfloat16", "float16") else half
    else:
        device, compute = "cpu", "float32"
    if plan is None:
        return Plan(model_id=model_id, task=task, backend="transformers", device=device, dtype=compute,
                    quantization="nf4", estimated_gb=0.0, available_gb=0.0, fits=True, reasons=[why],
                    compute_dtype=compute)
    return replace(plan, device=device, dtype=compute, quantization="nf4", compute_dtype=compute,
                   reasons=[*plan.reasons, why])


def _needs_4bit_base(adapter: Path) -> bool:
    if not adapter.is_dir():
        return False  # _attach_adapter says the folder is missing
    from localqwen.adapters.registry import needs_4bit_base

    return needs_4bit_base(adapter)


def is_vision_folder(path: Path) -> bool:
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    return "vision_config" in config


class _Control:
    """Stopping criterion: cancel, consumer-requested halt, and per-row stop strings."""

    def __init__(self, tokenizer: Any, prompt_length: int, stops: list[str], cancel: CancelToken | None) -> None:
        self.tokenizer = tokenizer
        self.prompt_length = prompt_length
        self.stops = [s for s in stops if s]
        self.window = max((len(s) for s in self.stops), default=0) + 8
        self.cancel = cancel
        self.halt = threading.Event()
        self.generated = 0

    @property
    def cancelled(self) -> bool:
        return bool(self.cancel is not None and self.cancel.cancelled)

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        self.generated = input_ids.shape[1] - self.prompt_length
        if self.halt.is_set() or self.cancelled:
            return torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        if self.stops:
            # Only generated tokens: the prompt's tail must not trigger a stop.
            start = max(self.prompt_length, input_ids.shape[1] - self.window)
            tails = self.tokenizer.batch_decode(input_ids[:, start:], skip_special_tokens=True)
            for row, tail in enumerate(tails):
                done[row] = any(stop in tail for stop in self.stops)
        return done


class TransformersEngine(Engine):
    backend = "transformers"
    supports_next_token_scores = True  # one forward pass, the last position's logits

    def __init__(self, path: str | Path, *, model_id: str = "", plan: Plan | None = None,
                 adapter: str | Path | None = None, trust_remote_code: bool = False) -> None:
        super().__init__()
        import torch
        from transformers import (
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoProcessor,
            AutoTokenizer,
        )

        from localqwen.runtime.model_files import check_model_folder

        self.path = Path(path)
        check_model_folder(self.path)
        self.model_id = model_id or self.path.name
        self.plan = plan
        self.supports_images = is_vision_folder(self.path)
        if adapter is not None and _needs_4bit_base(Path(adapter)) and (plan is None or plan.quantization != "nf4"):
            plan = self.plan = four_bit_plan(plan, model_id=self.model_id,
                                             task="vision" if self.supports_images else "text")
        kwargs = load_kwargs(plan, trust_remote_code=trust_remote_code)
        if self.supports_images:
            self.processor = AutoProcessor.from_pretrained(self.path, trust_remote_code=trust_remote_code)
            self.tokenizer = self.processor.tokenizer
            model = AutoModelForImageTextToText.from_pretrained(self.path, **kwargs)
        else:
            self.processor = None
            self.tokenizer = AutoTokenizer.from_pretrained(self.path, trust_remote_code=trust_remote_code)
            model = AutoModelForCausalLM.from_pretrained(self.path, **kwargs)
        if adapter is not None:
            model = _attach_adapter(model, Path(adapter))
        model.eval()
        self.model = model
        self._torch = torch
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        eos = model.generation_config.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        self._eos_ids.add(self.tokenizer.eos_token_id)
        self._lock = threading.Lock()  # one generate at a time per model

    # -- prompt building -------------------------------------------------------------------
    def render(self, messages: Messages, tools: Tools | None = None) -> str:
        """The prompt text the chat template makes (with image placeholders, before expansion)."""
        template_owner = self.processor or self.tokenizer
        return template_owner.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, tokenize=False
        )

    def encode(self, conversations: list[Messages], tools: Tools | None = None) -> Any:
        """Tokenized, left-padded batch (with pixel values for images) on the model's device."""
        texts = [self.render(messages, tools) for messages in conversations]
        if self.processor is not None:
            images = [load_image(ref) for messages in conversations for ref in _image_refs(messages)]
            inputs = self.processor(
                text=texts, images=images or None, padding=True, padding_side="left",
                return_tensors="pt", add_special_tokens=False,
            )
        else:
            inputs = self.tokenizer(
                texts, padding=True, padding_side="left", return_tensors="pt", add_special_tokens=False
            )
        return inputs.to(self.model.device)

    def count_tokens(self, messages: Messages, tools: Tools | None = None) -> int:
        inputs = self.encode([messages], tools)
        return int(inputs["attention_mask"][0].sum())

    def next_token_logprobs(self, messages: Messages, continuations: list[str], *,
                            tools: Tools | None = None) -> NextTokenScores:
        """One forward pass over the prompt; the log-softmax of the last position's logits at each
        continuation's first token."""
        self.ensure_open()
        check_messages(messages, allow_images=self.supports_images, model_id=self.model_id)
        firsts = []
        for text in continuations:
            tokens = self.tokenizer.encode(text, add_special_tokens=False) if text else []
            if not tokens:
                raise ValueError(f"a continuation to score must have at least one token; got {text!r}")
            firsts.append(int(tokens[0]))
        inputs = self.encode([messages], tools)
        with self._lock, self._torch.inference_mode():
            logits = self.model(**inputs).logits[0, -1].float()
        logprobs = self._torch.log_softmax(logits, dim=-1)
        return NextTokenScores(firsts, [float(logprobs[token]) for token in firsts], int(inputs["input_ids"].shape[1]))

    # -- generation ------------------------------------------------------------------------
    def _generate_kwargs(self, settings: GenerationSettings) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "max_new_tokens": settings.max_new_tokens,
            "do_sample": not settings.greedy,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": sorted(i for i in self._eos_ids if i is not None),
        }
        if not settings.greedy:
            kwargs.update(temperature=settings.temperature, top_p=settings.top_p, top_k=settings.top_k or None)
        else:
            # Silence "temperature is set but do_sample=False" from the model's generation config.
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if settings.repetition_penalty != 1.0:
            kwargs["repetition_penalty"] = settings.repetition_penalty
        if settings.seed is not None:
            self._torch.manual_seed(settings.seed)
        return kwargs

    def _stream(self, messages: Messages, tools: Tools | None, settings: GenerationSettings,
                cancel: CancelToken | None) -> Iterator[str]:
        from transformers import StoppingCriteriaList, TextIteratorStreamer

        inputs = self.encode([messages], tools)
        prompt_length = inputs["input_ids"].shape[1]
        # The consumer applies stop strings itself (precisely, on text) and then halts generation.
        control = _Control(self.tokenizer, prompt_length, [], cancel)
        streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)
        outputs: dict[str, Any] = {}

        def work() -> None:
            try:
                with self._torch.inference_mode():
                    outputs["sequences"] = self.model.generate(
                        **inputs, **self._generate_kwargs(settings), streamer=streamer,
                        stopping_criteria=StoppingCriteriaList([control]),
                    )
            except BaseException as exc:  # handed to the consumer thread below
                outputs["error"] = exc
                streamer.end()

        scanner = StopScanner(settings.stop)
        with self._lock:
            thread = threading.Thread(target=work, name="lq-generate", daemon=True)
            thread.start()
            finished = False
            try:
                for delta in streamer:
                    shown = scanner.feed(delta)
                    if shown:
                        yield shown
                    if scanner.stopped:
                        break
                else:
                    finished = True
            finally:
                # Also runs when the caller stops iterating early: halt, drain, wait for the thread.
                control.halt.set()
                if not finished:
                    for _ in streamer:
                        pass
                thread.join()
        if "error" in outputs:
            raise EngineError(f"generation failed with {self.model_id}: {outputs['error']}") from outputs["error"]
        tail = scanner.finish()
        if tail:
            yield tail
        generated = outputs["sequences"][0, prompt_length:].tolist()
        completion_tokens = _count_until_eos(generated, self._eos_ids, self.tokenizer.pad_token_id)
        if control.cancelled:
            reason = "cancelled"
        elif scanner.stopped or completion_tokens < len(generated) or (generated and generated[-1] in self._eos_ids):
            reason = "stop"
        else:
            reason = "length" if len(generated) >= settings.max_new_tokens else "stop"
        self.last_result = chat_result(scanner.text, prompt_length, completion_tokens, reason)

    def chat(self, messages: Messages, *, tools: Tools | None = None, settings: GenerationSettings | None = None,
             cancel: CancelToken | None = None) -> ChatResult:
        """Like ``stream`` but without the streamer thread: ``generate`` runs right here."""
        self.ensure_open()
        self.check_settings(settings or GenerationSettings())
        check_messages(messages, allow_images=self.supports_images, model_id=self.model_id)
        self.last_result = self._generate([messages], tools, settings, cancel)[0]
        return self.last_result

    def chat_batch(self, conversations: list[Messages], *, tools: Tools | None = None,
                   settings: GenerationSettings | None = None, cancel: CancelToken | None = None) -> list[ChatResult]:
        """Real batching: all conversations go through one left-padded ``generate`` call."""
        self.ensure_open()
        self.check_settings(settings or GenerationSettings())
        if not conversations:
            return []
        for messages in conversations:
            check_messages(messages, allow_images=self.supports_images, model_id=self.model_id)
        return self._generate(conversations, tools or None, settings, cancel)

    def _generate(self, conversations: list[Messages], tools: Tools | None, settings: GenerationSettings | None,
                  cancel: CancelToken | None) -> list[ChatResult]:
        from transformers import StoppingCriteriaList

        settings = settings or GenerationSettings()
        inputs = self.encode(conversations, tools)
        width = inputs["input_ids"].shape[1]
        control = _Control(self.tokenizer, width, settings.stop, cancel)
        with self._lock, self._torch.inference_mode():
            sequences = self.model.generate(
                **inputs, **self._generate_kwargs(settings), stopping_criteria=StoppingCriteriaList([control])
            )
        results = []
        for row in range(len(conversations)):
            generated = sequences[row, width:].tolist()
            completion_tokens = _count_until_eos(generated, self._eos_ids, self.tokenizer.pad_token_id)
            text = self.tokenizer.decode(generated[:completion_tokens], skip_special_tokens=True)
            stopped = False
            for stop in settings.stop:
                if stop and stop in text:
                    text, stopped = text[: text.index(stop)], True
            if control.cancelled:
                reason = "cancelled"
            elif stopped or completion_tokens < len(generated):
                reason = "stop"
            else:
                reason = "length" if completion_tokens >= settings.max_new_tokens else "stop"
            prompt_tokens = int(inputs["attention_mask"][row].sum())
            results.append(chat_result(text, prompt_tokens, completion_tokens, reason))
        return results

    def close(self) -> None:
        super().close()
        model = self.__dict__.pop("model", None)
        if model is not None:
            del model
            from localqwen.runtime.device import _free_memory

            _free_memory()


def _count_until_eos(generated: list[int], eos_ids: set[int], pad_id: int | None) -> int:
    """Generated tokens up to and including the first end-of-turn token (padding excluded)."""
    for index, token in enumerate(generated):
        if token in eos_ids:
            return index + 1
        if token == pad_id:
            return index
    return len(generated)


def _image_refs(messages: Messages) -> list[Any]:
    from localqwen.runtime.engine.messages import image_refs

    return image_refs(messages) if has_images(messages) else []


def _attach_adapter(model: Any, folder: Path) -> Any:
    """Load a fine-tuned adapter through the adapters registry (PEFT and our own methods)."""
    if not folder.is_dir():
        raise EngineError(f"adapter folder not found: {folder}")
    try:
        from localqwen.adapters.registry import load_adapter
    except ImportError:
        from peft import PeftModel

        return PeftModel.from_pretrained(model, folder)
    return load_adapter(model, folder)
