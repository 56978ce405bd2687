"""Robust readers for the structured replies agents ask models for.

Small models wrap JSON in prose or code fences, use single quotes, or ignore the format entirely.
Each reader returns None when nothing usable is there; the caller then takes its documented
deterministic fallback and records that it did.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (code fences, surrounding prose and Python-style dicts ok)."""
    if not text:
        return None
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        for start in [i for i, ch in enumerate(candidate) if ch == "{"][:20]:
            depth = 0
            in_string: str | None = None
            escaped = False
            for end in range(start, len(candidate)):
                ch = candidate[end]
                if in_string:
                    if escaped:
                        escaped = False
                    elif ch == "\\":
                        escaped = True
                    elif ch == in_string:
                        in_string = None
                elif ch in "\"'":
                    in_string = ch
                elif ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        parsed = _load(candidate[start:end + 1])
                        if isinstance(parsed, dict):
                            return parsed
                        break
    return None


def _load(snippet: str) -> Any:
    try:
        return json.loads(snippet)
    except json.JSONDecodeError:
        pass
    try:  # {'a': True} written Python-style; literal_eval never executes code
        return ast.literal_eval(snippet)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


_VERDICT = re.compile(r"(?i)\b(?:verdict|decision|result|结论|判定)\s*[:：=]?\s*\**\s*(PASS|RETRY|通过|重试|重写)")
_BARE = re.compile(r"(?im)^\s*\**\s*(PASS|RETRY)\b")


def parse_verdict(text: str) -> tuple[str, list[str]] | None:
    """("PASS"|"RETRY", reasons) from a JSON object, a "VERDICT: X" line or a bare first word."""
    data = find_json_object(text)
    if data:
        raw = str(data.get("verdict", data.get("decision", ""))).strip().upper()
        if raw in {"PASS", "RETRY"}:
            reasons = data.get("reasons", data.get("reason", []))
            if isinstance(reasons, str):
                reasons = [reasons]
            return raw, [str(r) for r in reasons if str(r).strip()]
    match = _VERDICT.search(text or "") or _BARE.search(text or "")
    if not match:
        return None
    word = match.group(1).upper()
    verdict = "PASS" if word in {"PASS", "通过"} else "RETRY"
    after = (text or "")[match.end():]
    reasons = [line.strip(" -*•\t") for line in after.splitlines() if line.strip(" -*•\t")]
    reasons = [re.sub(r"(?i)^reasons?\s*[:：]\s*", "", r) for r in reasons][:5]
    return verdict, [r for r in reasons if r]


def strings(value: Any, limit: int = 5) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value if str(v).strip()][:limit]


def boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "1", "false", "no", "0"}:
        return value.strip().lower() in {"true", "yes", "1"}
    return None
