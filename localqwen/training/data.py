"""Training data: read JSON / JSONL / CSV / `datasets` folders / ModelScope, validate, preview.

One row format everywhere (see CONTRACTS): SFT rows hold ``messages`` (+ optional ``tools`` and
``images``), DPO rows hold ``prompt``, ``chosen`` and ``rejected``. Readers never stop at a bad
row: it is kept with an ``__error__`` note so validation can report it by its number.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROLES = ("system", "user", "assistant", "tool")
MODELSCOPE_PREFIX = "modelscope:"
# CSV columns understood without a "messages" column (first match wins).
_PROMPT_COLUMNS = ("prompt", "question", "instruction", "query", "input", "user")
_ANSWER_COLUMNS = ("answer", "response", "output", "caption", "completion", "assistant")
_IMAGE_COLUMNS = ("image", "image_path", "images", "path")


@dataclass
class RowProblem:
    row: int  # 1-based, as people count rows in a file
    reason: str


@dataclass
class ValidationReport:
    valid: list[dict[str, Any]] = field(default_factory=list)
    problems: list[RowProblem] = field(default_factory=list)
    total: int = 0
    # each valid row's length in tokens, when the check counted them (``count_tokens`` given): what
    # ``batching = "bucket"`` groups by
    lengths: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self, limit: int = 10) -> str:
        text = f"{len(self.valid)} of {self.total} rows are valid"
        if self.problems:
            shown = "; ".join(f"row {p.row}: {p.reason}" for p in self.problems[:limit])
            more = f" (+{len(self.problems) - limit} more)" if len(self.problems) > limit else ""
            text += f". Problems: {shown}{more}"
        return text


class DataError(ValueError):
    """The data cannot be read at all (missing file, unknown format)."""


# ---------------------------------------------------------------------------------------------
# Reading


def read_rows(source: str | Path, *, max_rows: int | None = None) -> list[dict[str, Any]]:
    """Read every row of a data file/folder, normalized to our row format."""
    text = str(source)
    if text.startswith(MODELSCOPE_PREFIX):
        rows = _read_modelscope(text[len(MODELSCOPE_PREFIX):])
        base = Path.cwd()
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise DataError(f"data not found: {path}")
        base = path if path.is_dir() else path.parent
        if path.is_dir():
            rows = _read_datasets_folder(path)
        elif path.suffix.lower() == ".jsonl":
            rows = _read_jsonl(path)
        elif path.suffix.lower() == ".json":
            rows = _read_json(path)
        elif path.suffix.lower() == ".csv":
            rows = _read_csv(path)
        else:
            raise DataError(f"unsupported data file type '{path.suffix}' (use .json, .jsonl, .csv or a datasets folder)")
    if max_rows is not None:
        rows = rows[:max_rows]
    return [normalize_row(row, base) for row in rows]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                rows.append({"__error__": f"invalid JSON ({exc.msg} at column {exc.colno})"})
                continue
            rows.append(value if isinstance(value, dict) else {"__error__": "a row must be a JSON object"})
    return rows


def _read_json(path: Path) -> list[dict[str, Any]]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON: {exc}") from None
    if isinstance(value, dict):  # {"data": [...]} or {"train": [...]} wrappers are common
        for key in ("data", "train", "rows", "examples"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
    if not isinstance(value, list):
        raise DataError(f"{path} must hold a JSON list of rows")
    return [row if isinstance(row, dict) else {"__error__": "a row must be a JSON object"} for row in value]


def _read_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return [_csv_row(dict(record)) for record in csv.DictReader(handle)]


def _csv_row(record: dict[str, Any]) -> dict[str, Any]:
    """CSV cells are strings: decode JSON columns, or build messages from simple columns."""
    record = {str(k).strip().lower(): (v if v is not None else "") for k, v in record.items() if k is not None}
    row: dict[str, Any] = {}
    for key in ("messages", "tools", "images", "prompt", "chosen", "rejected"):
        cell = record.get(key, "")
        if isinstance(cell, str) and cell.strip()[:1] in ("[", "{"):
            try:
                row[key] = json.loads(cell)
            except json.JSONDecodeError as exc:
                return {"__error__": f"column '{key}' is not valid JSON ({exc.msg})"}
        elif cell:
            row[key] = cell
    if "messages" in record or "chosen" in record or "rejected" in record:
        return row  # the header says which format; empty cells are reported by validation
    return _simple_columns_row(record)


def _simple_columns_row(record: dict[str, Any]) -> dict[str, Any]:
    prompt = next((record[c] for c in _PROMPT_COLUMNS if record.get(c)), None)
    answer = next((record[c] for c in _ANSWER_COLUMNS if c in record), None)
    image = next((record[c] for c in _IMAGE_COLUMNS if record.get(c)), None)
    if answer is None:
        return {"__error__": f"no answer column (expected one of: {', '.join(_ANSWER_COLUMNS)}, or 'messages')"}
    user: list[dict[str, Any]] = []
    if image:
        user.append({"type": "image", "image": str(image)})
    user.append({"type": "text", "text": str(prompt or "Describe the image." if image else prompt or "")})
    messages: list[dict[str, Any]] = []
    if record.get("system"):
        messages.append({"role": "system", "content": record["system"]})
    messages.append({"role": "user", "content": user if image else user[-1]["text"]})
    messages.append({"role": "assistant", "content": str(answer)})
    return {"messages": messages}


def _read_datasets_folder(path: Path) -> list[dict[str, Any]]:
    """A folder written by ``datasets.Dataset.save_to_disk`` (or a DatasetDict: its train split)."""
    import datasets

    if not any((path / name).exists() for name in ("dataset_info.json", "dataset_dict.json", "state.json")):
        raise DataError(f"{path} is not a saved `datasets` folder (no dataset_info.json / dataset_dict.json)")
    loaded = datasets.load_from_disk(str(path))
    if isinstance(loaded, datasets.DatasetDict):
        split = "train" if "train" in loaded else next(iter(loaded))
        loaded = loaded[split]
    # Image features decode to PIL images; they stay as they are (the collator accepts them too).
    return [dict(row) for row in loaded]


def _read_modelscope(spec: str) -> list[dict[str, Any]]:
    """``modelscope:namespace/name[:subset][@split]`` -> rows (needs the `modelscope` extra and network)."""
    name, _, split = spec.partition("@")
    name, _, subset = name.partition(":")
    records = modelscope_load(name, subset or None, split or "train")
    return [modelscope_record_to_row(dict(record)) for record in records]


def modelscope_load(name: str, subset: str | None, split: str) -> Any:
    """The hub call, kept apart so it is the only thing a test without network replaces."""
    try:
        from modelscope.msdatasets import MsDataset
    except ImportError as exc:
        raise DataError(f"reading ModelScope datasets needs the 'modelscope' extra ({exc}): "
                        "pip install 'localqwen[modelscope]'") from exc
    try:
        return MsDataset.load(name, subset_name=subset, split=split)
    except Exception as exc:
        raise DataError(f"cannot load ModelScope dataset '{name}': {exc}") from exc


def modelscope_record_to_row(record: dict[str, Any]) -> dict[str, Any]:
    """ModelScope caption/QA sets use flat columns (e.g. coco_2014_caption: image_id, image, caption)."""
    if "messages" in record or "chosen" in record:
        return record
    lowered = {str(k).lower(): v for k, v in record.items()}
    image = next((lowered[c] for c in _IMAGE_COLUMNS if lowered.get(c) is not None), None)
    if image is not None and not isinstance(image, str):
        image = getattr(image, "filename", None) or image  # a decoded PIL image stays as it is
    flat = {k: v for k, v in lowered.items() if k not in _IMAGE_COLUMNS}
    if image is not None:
        flat["image"] = image
    return _simple_columns_row(flat)


# ---------------------------------------------------------------------------------------------
# Normalizing


def normalize_row(row: dict[str, Any], base: Path) -> dict[str, Any]:
    """Resolve relative image paths and move top-level ``images`` into the first user turn."""
    if "__error__" in row:
        return row
    row = dict(row)
    if "messages" in row and isinstance(row["messages"], list):
        images = row.pop("images", None)
        row["messages"] = [_normalize_message(m, base) for m in row["messages"]]
        if images:
            if isinstance(images, (str, Path)):
                images = [images]
            row["messages"] = _attach_images(row["messages"], [_resolve_image(i, base) for i in images])
    if "prompt" in row:
        if isinstance(row["prompt"], list):
            row["prompt"] = [_normalize_message(m, base) for m in row["prompt"]]
        if row.get("images"):
            images = row["images"] if isinstance(row["images"], list) else [row["images"]]
            row["images"] = [_resolve_image(i, base) for i in images]
    return row


def _normalize_message(message: Any, base: Path) -> Any:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    parts = []
    for part in message["content"]:
        if isinstance(part, dict) and part.get("type") == "image" and isinstance(part.get("image"), (str, Path)):
            part = {**part, "image": _resolve_image(part["image"], base)}
        parts.append(part)
    return {**message, "content": parts}


def _resolve_image(image: Any, base: Path) -> Any:
    if isinstance(image, (str, Path)) and not str(image).startswith(("http://", "https://", "data:")):
        path = Path(image).expanduser()
        return str(path if path.is_absolute() else (base / path))
    return image


def _attach_images(messages: list[Any], images: list[Any]) -> list[Any]:
    """Put loose images into the first user turn (before its text), as Qwen's examples do."""
    out = []
    placed = False
    for message in messages:
        if not placed and isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            text_parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
            message = {**message, "content": [{"type": "image", "image": i} for i in images] + text_parts}
            placed = True
        out.append(message)
    return out


# ---------------------------------------------------------------------------------------------
# Validating


def message_images(messages: list[dict[str, Any]]) -> list[Any]:
    """Every image in the conversation, in order."""
    found = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            found.extend(p.get("image") for p in content if isinstance(p, dict) and p.get("type") == "image")
    return found


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _image_problem(image: Any) -> str | None:
    if image is None:
        return "an image part has no 'image' value"
    if isinstance(image, (str, Path)) and not Path(image).is_file():
        return f"missing image: {image}"
    return None


def _sft_problem(row: dict[str, Any]) -> str | None:
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        return "no 'messages' list"
    assistant_turns = 0
    for index, message in enumerate(messages, 1):
        if not isinstance(message, dict):
            return f"message {index} is not an object"
        role = message.get("role")
        if role not in ROLES:
            return f"message {index} has unknown role {role!r} (expected one of {', '.join(ROLES)})"
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            return f"message {index} content must be text or a list of parts"
        if role == "assistant":
            assistant_turns += 1
            if not _text_of(content).strip() and not message.get("tool_calls"):
                return f"empty answer (assistant message {index})"
    if not assistant_turns:
        return "no assistant turn to learn from"
    for image in message_images(messages):
        problem = _image_problem(image)
        if problem:
            return problem
    tools = row.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        return "'tools' must be a list of function schemas"
    return None


def _dpo_problem(row: dict[str, Any]) -> str | None:
    for key in ("prompt", "chosen", "rejected"):
        if key not in row:
            return f"missing '{key}'"
    for key in ("chosen", "rejected"):
        value = row[key]
        text = value if isinstance(value, str) else "".join(_text_of(m.get("content")) for m in value if isinstance(m, dict)) if isinstance(value, list) else ""
        if not text.strip():
            return f"empty '{key}' answer"
    if _completion_text(row["chosen"]) == _completion_text(row["rejected"]):
        return "chosen and rejected are the same"
    for image in row.get("images") or []:
        problem = _image_problem(image)
        if problem:
            return problem
    if isinstance(row["prompt"], list):
        for image in message_images(row["prompt"]):
            problem = _image_problem(image)
            if problem:
                return problem
    return None


def _completion_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "".join(_text_of(m.get("content")) for m in value if isinstance(m, dict))


def validate_rows(
    rows: list[dict[str, Any]],
    objective: str = "sft",
    *,
    max_length: int | None = None,
    count_tokens: Callable[[dict[str, Any]], int] | None = None,
) -> ValidationReport:
    """Check each row; problems name the row number and the reason. With ``count_tokens``, each
    valid row's token count is kept (``report.lengths``) and, with ``max_length``, a longer row is a
    problem."""
    report = ValidationReport(total=len(rows))
    check = _dpo_problem if objective == "dpo" else _sft_problem
    for number, row in enumerate(rows, 1):
        problem = row.get("__error__") or check(row)
        length = None
        if problem is None and count_tokens is not None:
            try:
                length = count_tokens(row)
            except Exception as exc:  # a row the template cannot render
                problem = f"cannot be rendered: {exc}"
            else:
                if max_length is not None and length > max_length:
                    problem = f"too long ({length} tokens > max_length {max_length})"
        if problem:
            report.problems.append(RowProblem(number, problem))
        else:
            report.valid.append(row)
            if length is not None:
                report.lengths.append(length)
    return report


# ---------------------------------------------------------------------------------------------
# Preview and splitting


def _short(text: str, width: int = 80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def preview_rows(rows: list[dict[str, Any]], n: int = 5) -> tuple[list[str], list[list[Any]]]:
    """(columns, rows) for a table of the first ``n`` rows."""
    if rows and "chosen" in rows[0]:
        columns = ["#", "prompt", "chosen", "rejected", "images"]
        table = []
        for number, row in enumerate(rows[:n], 1):
            prompt = row.get("prompt")
            prompt_text = prompt if isinstance(prompt, str) else " | ".join(_text_of(m.get("content")) for m in prompt or [])
            images = len(row.get("images") or []) + (len(message_images(prompt)) if isinstance(prompt, list) else 0)
            table.append([number, _short(prompt_text), _short(_completion_text(row.get("chosen", ""))),
                          _short(_completion_text(row.get("rejected", ""))), images])
        return columns, table
    columns = ["#", "system", "user", "assistant", "images", "tools"]
    table = []
    for number, row in enumerate(rows[:n], 1):
        if "__error__" in row:
            table.append([number, "", f"(unreadable: {row['__error__']})", "", 0, 0])
            continue
        messages = row.get("messages") or []
        by_role: dict[str, list[str]] = {}
        for message in messages:
            if isinstance(message, dict):
                by_role.setdefault(str(message.get("role")), []).append(_text_of(message.get("content")) or (
                    json.dumps(message.get("tool_calls"), ensure_ascii=False) if message.get("tool_calls") else ""))
        table.append([
            number,
            _short(" | ".join(by_role.get("system", [])), 40),
            _short(" | ".join(by_role.get("user", []))),
            _short(" | ".join(by_role.get("assistant", []))),
            len(message_images(messages)) if isinstance(messages, list) else 0,
            len(row.get("tools") or []),
        ])
    return columns, table


def split_eval(rows: list[dict[str, Any]], fraction: float, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Hold out ``fraction`` of the rows (a seeded shuffle, so reruns hold out the same rows)."""
    if fraction <= 0 or len(rows) < 2:
        return rows, []
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_eval = max(1, int(round(len(rows) * fraction)))
    held = set(order[:n_eval])
    return [r for i, r in enumerate(rows) if i not in held], [r for i, r in enumerate(rows) if i in held]
