"""A training job's data: the train source (a file, a hub id or a data source), held-out rows, validation,
and the datasets TRL's trainers take.

A ``[data.source]`` is built with the ``data_sources`` mapping the caller passes (``localqwen train``
passes the workbench's, plugins' included; None means LocalQwen's built-ins).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localqwen.training.config import JobConfig
from localqwen.training.data import ValidationReport, read_rows, split_eval, validate_rows
from localqwen.training.data_sources import DataSources
from localqwen.training.event_log import EventSink
from localqwen.vocabulary import events as ev


@dataclass
class PreparedData:
    train: list[dict[str, Any]]
    eval: list[dict[str, Any]]
    report: ValidationReport
    eval_report: ValidationReport | None = None
    train_path: Path | None = None


def resolve_train_source(config: JobConfig, data_sources: DataSources | None = None) -> Path | str:
    """The train file or hub id; a ``[data.source]`` is built with ``data_sources`` (None: the built-ins)."""
    if config.data.source is not None:
        from localqwen.training.data_sources import build_data_source, builtin_data_sources
        from localqwen.training.distributed import on_main_process

        sources = builtin_data_sources() if data_sources is None else data_sources
        source = config.data.source
        # Under accelerate launch rank 0 builds the files and the other ranks read them.
        return on_main_process(lambda: build_data_source(sources, source.name, config.output_path / "data",
                                                         **source.options))
    assert config.data.train is not None
    if config.data.train.startswith("modelscope:"):
        return config.data.train
    return config.resolve(config.data.train)  # type: ignore[return-value]


def sibling_eval_file(train: Path) -> Path | None:
    """A generator's held-out file beside its train file (train.jsonl -> eval.jsonl, x_train -> x_test)."""
    for word in ("eval", "test", "validation"):
        candidate = train.with_name(train.name.replace("train", word))
        if candidate != train and candidate.exists():
            return candidate
    return None


def prepare_data(config: JobConfig, count_tokens: Callable[[dict[str, Any]], int] | None, emit: EventSink,
                 data_sources: DataSources | None = None) -> PreparedData:
    objective = config.training.objective
    train_source = resolve_train_source(config, data_sources)
    rows = read_rows(train_source, max_rows=config.data.max_rows)
    eval_rows: list[dict[str, Any]] = []
    eval_source: Path | None = None
    if config.data.eval:
        eval_source = config.resolve(config.data.eval)
    elif config.data.source is not None and isinstance(train_source, Path):
        eval_source = sibling_eval_file(train_source)
    if eval_source is not None:
        eval_rows = read_rows(eval_source)
    elif config.data.eval_fraction > 0:
        rows, eval_rows = split_eval(rows, config.data.eval_fraction, config.training.seed)
    # Packing limits each piece; other modes must fit whole rows. The counts are kept for bucketing.
    length_check = count_tokens if objective == "sft" else None
    report = validate_rows(rows, objective, max_length=config.training.max_length, count_tokens=length_check)
    eval_report = validate_rows(eval_rows, objective, max_length=config.training.max_length,
                                count_tokens=length_check) if eval_rows else None
    for name, rep in (("train", report), ("eval", eval_report)):
        if rep is not None and rep.problems:
            emit(ev.Warning(message=f"{name} data: {rep.summary()}"))
    if report.problems and not config.data.skip_bad_rows:
        raise ValueError(f"training data has bad rows (set data.skip_bad_rows = true to drop them): {report.summary()}")
    if not report.valid:
        raise ValueError(f"no valid training rows: {report.summary()}")
    return PreparedData(report.valid, eval_report.valid if eval_report else [], report, eval_report,
                        train_source if isinstance(train_source, Path) else None)


def sft_dataset(rows: list[dict[str, Any]], lengths: list[int] | None = None) -> Any:
    """Rows travel as JSON strings: chat rows have mixed shapes that Arrow cannot type. ``lengths``:
    each row's token count, the "length" column that ``batching = "bucket"`` groups by. Never the
    JSON's character count: that counts image paths and tool schemas, and in templated rows it
    tracks the words that differ ("lion" / "elephant"), so sorted batches held one answer each and a
    small model learned that batch's answer instead of reading the question (a tiny Qwen3-VL, asked
    "Where is the zebra?", named the right species by chance only, 29%; 100% with random batches)."""
    import datasets

    texts = [json.dumps(r, ensure_ascii=False, default=str) for r in rows]
    columns: dict[str, list[Any]] = {"row_json": texts}
    if lengths is not None:
        if len(lengths) != len(rows):
            raise ValueError(f"{len(lengths)} lengths for {len(rows)} rows")
        columns["length"] = list(lengths)
    return datasets.Dataset.from_dict(columns)


def dpo_dataset(rows: list[dict[str, Any]]) -> Any:
    """TRL's preference format: prompt messages, chosen/rejected turns, images in their own column."""
    import datasets

    from localqwen.training.data import message_images

    prompts, chosen, rejected, images = [], [], [], []
    for row in rows:
        prompt = row["prompt"]
        row_images = list(row.get("images") or [])
        if isinstance(prompt, str):
            prompt = [{"role": "user", "content": prompt}]
        flat = []
        for message in prompt:
            content = message.get("content")
            if isinstance(content, list):
                row_images += message_images([message])
                content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
            flat.append({"role": message["role"], "content": content})
        prompts.append(flat)
        chosen.append(_as_turns(row["chosen"]))
        rejected.append(_as_turns(row["rejected"]))
        images.append([str(i) for i in row_images])
    data: dict[str, Any] = {"prompt": prompts, "chosen": chosen, "rejected": rejected}
    if any(images):
        data["images"] = images
        dataset = datasets.Dataset.from_dict(data)
        return dataset.cast_column("images", datasets.Sequence(datasets.Image()))
    return datasets.Dataset.from_dict(data)


def _as_turns(value: Any) -> list[dict[str, str]]:
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    turns = []
    for message in value:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
        turns.append({"role": message.get("role", "assistant"), "content": content})
    return turns
