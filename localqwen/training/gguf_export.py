"""GGUF export: a (fine-tuned) Qwen3 / Qwen3-VL model -> llama.cpp files, quantized, ready to run.

    from localqwen.training.gguf_export import export_gguf
    result = export_gguf("outputs/my-run", "exports/", ["Q4_K_M", "Q8_0"], progress=print)
    result.files  # [ExportedFile(quant="Q4_K_M", path=.../my-run-Q4_K_M.gguf, size_bytes=..., seconds=...), ...]

The source is a training run folder (its job.toml and final/), a LoRA-family adapter folder (merged
into its base on the fly; ``base=`` names the base when the adapter does not), or a whole model
folder. Steps, each a child process where llama.cpp or the converter could crash or be cancelled:

1. merge the adapter into the base (``after.merge_lora``: the trainer's safety-checked loader);
2. convert to one float GGUF (F16 by default) with llama.cpp's convert_hf_to_gguf.py
   (``llama_converter`` makes it available; ``gguf_convert`` runs it), and for Qwen3-VL the vision
   projector ``mmproj-<name>-F16.gguf``, named so LocalQwen's engine (``find_mmproj``), LM Studio
   and llama-server find it beside the model;
3. quantize that file to each requested type with llama.cpp's own ``llama_model_quantize``
   (``gguf_quantize``), with per-tensor progress;
4. write ``<name>.Modelfile`` (Ollama) and ``<name>-README.md`` (LM Studio, llama-server, LocalQwen).

MoE-LoRA / MoT-LoRA adapters route tokens between experts at run time: there is no single weight
matrix to fold them into, and llama.cpp has no such layer, so they cannot be exported. ``inspect_source``
says so before any work; ``base_only=True`` exports the base model alone instead.

``export_events`` is the same export as an event stream (for plugin actions: ``result = yield from
export_events(...)``); ``export_gguf`` runs it, hands every event to ``progress`` and returns the result.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import Cancelled, CancelToken

DEFAULT_QUANTS: tuple[str, ...] = ("Q4_K_M",)
# Float outputs the converter writes itself (no quantize step); anything else is quantized from one.
FLOAT_TYPES = {"F32": "f32", "F16": "f16", "BF16": "bf16"}
GGUF_SUPPORTED = frozenset({"Qwen3ForCausalLM", "Qwen2ForCausalLM", "Qwen3MoeForCausalLM",
                            "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
                            "Qwen2_5_VLForConditionalGeneration", "Qwen2VLForConditionalGeneration"})
# Adapter methods that are not a weight delta, so no merge exists (see the module docstring).
UNMERGEABLE_REASON = ("{method} routes each token between several expert adapters at run time; there is no "
                      "single weight change to fold into the model, and llama.cpp has no such layer")

Event = Any
Progress = Callable[[Event], None]


class ExportError(RuntimeError):
    """The export cannot be done; the message says why and what to do instead."""


@dataclass
class ExportSource:
    """What a source folder holds and how it becomes one plain model folder for the converter."""

    path: Path
    kind: Literal["model", "adapter"]
    name: str
    model_dir: Path | None = None  # the whole model (kind "model", or a full fine-tune's final/)
    base: Path | str | None = None  # the base an adapter was trained on
    adapter: Path | None = None
    method: str = "full"
    mergeable: bool = True
    reason: str = ""  # why it cannot be merged
    vision: bool = False
    architectures: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.kind == "model":
            return f"model {self.model_dir}"
        return f"{self.method} adapter {self.adapter} on {self.base}"


@dataclass
class ExportedFile:
    quant: str
    path: Path
    size_bytes: int
    seconds: float


@dataclass
class ExportResult:
    name: str
    output_dir: Path
    files: list[ExportedFile]
    mmproj: Path | None
    modelfile: Path
    readme: Path
    source: str
    base_only: bool = False
    seconds: float = 0.0

    def path(self, quant: str) -> Path:
        """The file for ``quant`` (e.g. "Q4_K_M")."""
        for item in self.files:
            if item.quant == quant.upper():
                return item.path
        raise KeyError(f"no {quant} file in this export (made: {', '.join(f.quant for f in self.files)})")

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return json.loads(json.dumps(data, default=str))

    def rows(self) -> list[list[Any]]:
        """[file, type, MB, seconds] per file, for a table."""
        rows = [[f.path.name, f.quant, round(f.size_bytes / 1e6, 2), round(f.seconds, 1)] for f in self.files]
        if self.mmproj is not None:
            rows.append([self.mmproj.name, "vision projector", round(self.mmproj.stat().st_size / 1e6, 2), ""])
        return rows


# ---------------------------------------------------------------------------------------------
# What is being exported


def inspect_source(source: str | Path, *, base: str | Path | None = None) -> ExportSource:
    """Read ``source`` (a training run, an adapter folder or a model folder) without loading weights.

    Raises ExportError for a folder that is none of these, or an adapter whose base is unknown."""
    path = Path(source).expanduser().resolve()
    if not path.is_dir():
        raise ExportError(f"{source}: no such folder (give a model folder, an adapter folder or a training run)")
    name = _safe_name(path.parent.name if path.name == "final" else path.name)
    if path.name == "final" and (path.parent / "job.toml").is_file():
        path = path.parent  # a run's final/ folder: its job.toml says the base and the method
    job = path / "job.toml"
    if job.is_file() and (path / "final").is_dir():
        from localqwen.training.config import load_job_config

        config = load_job_config(job)
        final = path / "final"
        if config.method.name == "full":
            return _model_source(path, final, name)
        run_base = base or _local_or_hub(config, config.model.path)
        return _adapter_source(path, final, name, run_base)
    if (path / "localqwen_adapter.json").is_file() or (path / "adapter_config.json").is_file():
        return _adapter_source(path, path, name, base)
    if (path / "config.json").is_file():
        return _model_source(path, path, name)
    raise ExportError(f"{path} holds no model (config.json), adapter (adapter_config.json / localqwen_adapter.json) "
                      "or training run (job.toml + final/)")


def _local_or_hub(config: Any, ref: str) -> Path | str:
    local = config.resolve(ref)
    return local if local is not None and local.exists() else ref


def _model_source(path: Path, model_dir: Path, name: str) -> ExportSource:
    config = _read_config(model_dir)
    return ExportSource(path, "model", name, model_dir=model_dir, vision="vision_config" in config,
                        architectures=list(config.get("architectures") or []))


def _adapter_source(path: Path, adapter: Path, name: str, base: str | Path | None) -> ExportSource:
    from localqwen.adapters import get_method
    from localqwen.adapters.io import read_meta

    meta = read_meta(adapter) or {}
    peft_config = _read_json(adapter / "adapter_config.json")
    method = meta.get("method") or ("ia3" if peft_config.get("peft_type") == "IA3" else
                                     "dora" if peft_config.get("use_dora") else "lora")
    base = base or peft_config.get("base_model_name_or_path") or meta.get("base_model")
    if not base:
        raise ExportError(f"{adapter} does not say which base model it was trained on: give the base model "
                          "(--base PATH, or base=...)")
    base_ref: Path | str = Path(base).expanduser() if Path(str(base)).expanduser().exists() else str(base)
    spec = get_method(method)
    mergeable = not spec.own  # our own methods (MoE-LoRA, MoT-LoRA) have no merge
    config = _read_config(base_ref) if isinstance(base_ref, Path) else {}
    return ExportSource(path, "adapter", name, base=base_ref, adapter=adapter, method=method, mergeable=mergeable,
                        reason="" if mergeable else UNMERGEABLE_REASON.format(method=method),
                        vision="vision_config" in config, architectures=list(config.get("architectures") or []))


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExportError(f"{path} is not readable JSON: {exc}") from None
    return data if isinstance(data, dict) else {}


def _read_config(model_dir: Path) -> dict[str, Any]:
    config = _read_json(Path(model_dir) / "config.json")
    if not config:
        raise ExportError(f"{model_dir} has no config.json: not a Hugging Face model folder")
    return config


def _safe_name(text: str) -> str:
    """A file-name stem: letters, digits, '.', '_' and '-' only."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return cleaned or "model"


def check_quants(quant_types: Iterable[str]) -> list[str]:
    """Upper-cased, de-duplicated types, each one llama.cpp can make (ValueError names the choices)."""
    from localqwen.training.gguf_quantize import normalize_quant

    chosen: list[str] = []
    for raw in quant_types:
        key = raw.strip().upper()
        key = key if key in FLOAT_TYPES else normalize_quant(key)
        if key not in chosen:
            chosen.append(key)
    if not chosen:
        raise ValueError("pick at least one GGUF type, e.g. Q4_K_M")
    return chosen


# ---------------------------------------------------------------------------------------------
# The export


def export_gguf(source: str | Path, output_dir: str | Path, quant_types: Sequence[str] = DEFAULT_QUANTS, *,
                base: str | Path | None = None, name: str | None = None, base_only: bool = False,
                outtype: str = "F16", threads: int = 0, progress: Progress | None = None,
                cancel: CancelToken | None = None) -> ExportResult:
    """Export ``source`` to GGUF files in ``output_dir``, one per type in ``quant_types``.

    ``quant_types``: llama.cpp types ("Q4_K_M", "Q8_0", "Q5_K_M", ...) and/or "F16" / "BF16" / "F32".
    ``base``: the base model for an adapter that does not name it. ``name``: file-name stem (default:
    the run or model folder's name). ``base_only``: export the base model when the adapter cannot be
    merged (MoE-LoRA / MoT-LoRA). ``outtype``: the float GGUF quantizing starts from. ``threads``:
    for quantizing (0 = all cores). ``progress`` gets every event (Step, Progress, Log, Warning,
    FileWritten). ``cancel`` stops it (raises Cancelled; partial files are removed).

    Raises ExportError (or ValueError for a bad type) with what to do instead."""
    stream = export_events(source, output_dir, quant_types, base=base, name=name, base_only=base_only,
                           outtype=outtype, threads=threads, cancel=cancel)
    while True:
        try:
            event = next(stream)
        except StopIteration as stop:
            result: ExportResult = stop.value
            return result
        if progress is not None:
            progress(event)


def export_events(source: str | Path, output_dir: str | Path, quant_types: Sequence[str] = DEFAULT_QUANTS, *,
                  base: str | Path | None = None, name: str | None = None, base_only: bool = False,
                  outtype: str = "F16", threads: int = 0,
                  cancel: CancelToken | None = None) -> Generator[Event, None, ExportResult]:
    """``export_gguf`` as events; the generator's return value is the ExportResult."""
    from localqwen.runtime.model_files import check_model_folder
    from localqwen.training.llama_converter import ensure_converter, find_converter

    started = time.monotonic()
    cancel = cancel or CancelToken()
    quants = check_quants(quant_types)
    float_type = outtype.upper()
    if float_type not in FLOAT_TYPES:
        raise ValueError(f"outtype must be one of {', '.join(FLOAT_TYPES)}, not {outtype!r}")
    plan = inspect_source(source, base=base)
    stem = _safe_name(name) if name else plan.name
    if plan.kind == "adapter" and not plan.mergeable:
        if not base_only:
            raise ExportError(f"cannot export {plan.describe()}: {plan.reason}. Export the base model alone instead "
                              "(--base-only / base_only=True), or train a LoRA/DoRA/IA3 adapter, which merges.")
        yield ev.Warning(message=f"exporting the base model {plan.base} only: the {plan.method} adapter is not in "
                                 f"these files ({plan.reason})")
    if plan.architectures and not set(plan.architectures) & GGUF_SUPPORTED:
        raise ExportError(f"llama.cpp's converter does not support {plan.architectures}; "
                          f"supported here: {', '.join(sorted(GGUF_SUPPORTED))}")
    if plan.kind == "model":
        assert plan.model_dir is not None
        check_model_folder(plan.model_dir)  # the converter would unpickle .bin weights: safetensors only
    out = Path(output_dir).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    if find_converter() is None:
        yield ev.Log(message="unpacking llama.cpp's converter from the llama-cpp-python source distribution "
                             "(once; pip may download it)...")
    converter = ensure_converter()
    work = Path(tempfile.mkdtemp(prefix=f".{stem}-export-", dir=out))
    written: list[Path] = []  # removed again if the export does not finish
    finished = False
    try:
        model_dir = yield from _whole_model(plan, work, base_only, cancel)
        check_model_folder(model_dir)
        if not plan.architectures:  # an adapter on a hub base: known only now
            architectures = list(_read_config(model_dir).get("architectures") or [])
            if not set(architectures) & GGUF_SUPPORTED:
                raise ExportError(f"llama.cpp's converter does not support {architectures}")
        vision = "vision_config" in _read_config(model_dir)
        files: list[ExportedFile] = []
        keep_float = float_type in quants
        float_file = (out if keep_float else work) / f"{stem}-{float_type}.gguf"
        yield ev.Step(step="convert", title=f"Converting to GGUF ({float_type})")
        clock = time.monotonic()
        written.append(float_file)
        yield from _convert(converter, model_dir, float_file, FLOAT_TYPES[float_type], work, cancel)
        convert_s = time.monotonic() - clock
        if keep_float:
            files.append(ExportedFile(float_type, float_file, float_file.stat().st_size, convert_s))
            yield ev.FileWritten(path=str(float_file), description=f"GGUF {float_type}")
        mmproj = None
        if vision:
            mmproj = out / f"mmproj-{stem}-F16.gguf"
            written.append(mmproj)
            yield from _convert(converter, model_dir, mmproj, "f16", work, cancel, mmproj=True)
            yield ev.FileWritten(path=str(mmproj), description="vision projector (mmproj) for llama.cpp")
        yield ev.Step(step="convert", title=f"Converting to GGUF ({float_type})", status="finished",
                      elapsed_s=time.monotonic() - clock)
        for quant in quants:
            if quant in FLOAT_TYPES:
                if quant != float_type:
                    target = out / f"{stem}-{quant}.gguf"
                    written.append(target)
                    clock = time.monotonic()
                    yield from _convert(converter, model_dir, target, FLOAT_TYPES[quant], work, cancel)
                    files.append(ExportedFile(quant, target, target.stat().st_size, time.monotonic() - clock))
                    yield ev.FileWritten(path=str(target), description=f"GGUF {quant}")
                continue
            target = out / f"{stem}-{quant}.gguf"
            written.append(target)
            yield ev.Step(step=f"quantize-{quant}", title=f"Quantizing to {quant}")
            clock = time.monotonic()
            yield from _quantize(float_file, target, quant, threads, work, cancel)
            seconds = time.monotonic() - clock
            files.append(ExportedFile(quant, target, target.stat().st_size, seconds))
            yield ev.Step(step=f"quantize-{quant}", title=f"Quantizing to {quant}", status="finished", elapsed_s=seconds)
            yield ev.FileWritten(path=str(target), description=f"GGUF {quant} ({target.stat().st_size / 1e6:,.1f} MB)")
        files.sort(key=lambda f: quants.index(f.quant))
        from localqwen.training.gguf_snippets import write_snippets

        modelfile, readme = write_snippets(out, stem, [f.path for f in files], mmproj)
        yield ev.FileWritten(path=str(modelfile), description=f"Ollama: ollama create {stem} -f {modelfile.name}")
        yield ev.FileWritten(path=str(readme), description="how to run these files in LM Studio, llama-server, LocalQwen")
        result = ExportResult(stem, out, files, mmproj, modelfile, readme, plan.describe(),
                              base_only=plan.kind == "adapter" and not plan.mergeable,
                              seconds=time.monotonic() - started)
        yield ev.Table(title="GGUF export", columns=["file", "type", "MB", "seconds"], rows=result.rows())
        finished = True
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not finished:
            for path in written:
                path.unlink(missing_ok=True)


def convert_model(model_dir: str | Path, out_file: str | Path, *, outtype: str = "F16",
                  cancel: CancelToken | None = None) -> Path:
    """One float GGUF (``outtype`` F16 / BF16 / F32) of a whole model folder, nothing else: no merge,
    no quantizing, no snippets (``export_gguf`` does all of that)."""
    from localqwen.runtime.model_files import check_model_folder
    from localqwen.training.llama_converter import ensure_converter

    model_dir = Path(model_dir)
    architectures = list(_read_config(model_dir).get("architectures") or [])
    if not set(architectures) & GGUF_SUPPORTED:
        raise ExportError(f"llama.cpp's converter does not support {architectures or 'this model'}; "
                          f"supported here: {', '.join(sorted(GGUF_SUPPORTED))}")
    check_model_folder(model_dir)  # the converter would unpickle .bin weights: safetensors only
    if outtype.upper() not in FLOAT_TYPES:
        raise ValueError(f"outtype must be one of {', '.join(FLOAT_TYPES)}, not {outtype!r}")
    converter = ensure_converter()
    out_file = Path(out_file)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".convert-", dir=out_file.parent) as work:
        for _event in _convert(converter, model_dir, out_file, FLOAT_TYPES[outtype.upper()], Path(work),
                               cancel or CancelToken()):
            pass
    return out_file


def _whole_model(plan: ExportSource, work: Path, base_only: bool,
                 cancel: CancelToken) -> Generator[Event, None, Path]:
    """The folder to convert: the model itself, the base alone, or the adapter merged into its base."""
    if plan.kind == "model":
        assert plan.model_dir is not None
        return plan.model_dir
    if not plan.mergeable and base_only:
        if not isinstance(plan.base, Path):
            raise ExportError(f"the base model {plan.base} is not a local folder; download it and give its path")
        return plan.base
    from localqwen.training.merge import merge_lora

    assert plan.adapter is not None and plan.base is not None
    yield ev.Step(step="merge", title=f"Merging the {plan.method} adapter into {Path(str(plan.base)).name}")
    clock = time.monotonic()
    merged = merge_lora(plan.base, plan.adapter, work / "merged")
    cancel.raise_if_cancelled()
    yield ev.Step(step="merge", title=f"Merging the {plan.method} adapter into {Path(str(plan.base)).name}",
                  status="finished", elapsed_s=time.monotonic() - clock)
    return merged


def _convert(converter: Path, model_dir: Path, target: Path, outtype: str, work: Path, cancel: CancelToken, *,
             mmproj: bool = False) -> Generator[Event, None, None]:
    command = [sys.executable, "-m", "localqwen.training.gguf_convert", str(converter), str(model_dir),
               "--outfile", str(target), "--outtype", outtype, *(["--mmproj"] if mmproj else [])]
    what = "vision projector" if mmproj else f"GGUF {outtype}"
    yield from _child(command, work / ("convert-mmproj.log" if mmproj else f"convert-{outtype}.log"), cancel,
                      f"converting to {what} failed")
    if not target.is_file():
        raise ExportError(f"the converter finished but wrote no {target.name}")


def _quantize(source: Path, target: Path, quant: str, threads: int, work: Path,
              cancel: CancelToken) -> Generator[Event, None, None]:
    command = [sys.executable, "-m", "localqwen.training.gguf_quantize", str(source), str(target), quant,
               "--threads", str(threads)]
    yield from _child(command, work / f"quantize-{quant}.log", cancel, f"quantizing to {quant} failed")
    if not target.is_file():
        raise ExportError(f"llama.cpp's quantize finished but wrote no {target.name}")


def _child(command: list[str], log: Path, cancel: CancelToken, failure: str) -> Generator[Event, None, None]:
    """Run a child that prints events; relay them, and turn its ending into Cancelled / ExportError."""
    from localqwen.jobs.process_runner import command_events

    done: ev.Done | None = None
    for event in command_events(command, cancel, stderr_path=log):
        if isinstance(event, ev.Done):
            done = event
        elif isinstance(event, ev.Progress):
            yield event
        # anything else the converter prints on stdout is noise for the user; its log has it all
    if cancel.cancelled or (done is not None and done.status == "cancelled"):
        raise Cancelled(cancel.reason or "cancelled")
    if done is None or done.status != "ok":
        raise ExportError(f"{failure}: {done.summary if done else 'no result'}")
