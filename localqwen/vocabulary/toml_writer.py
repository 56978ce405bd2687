"""Writing TOML: the app config file, one changed setting, and training job configs.

The standard library reads TOML (``tomllib``) but cannot write it, and our files hold only
plain shapes (scalars, lists, tables), so a few lines here do instead of another dependency.
Whatever this writes, ``tomllib`` reads back to the same values (tests/test_toml_writer.py).
"""

from __future__ import annotations

import enum
import json
import os
import re
from collections.abc import Collection, Mapping
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_key(key: Any) -> str:
    """A key as TOML writes it: bare when it can be, quoted otherwise."""
    key = str(key)
    return key if _BARE_KEY.match(key) else _string(key)


def toml_value(value: Any) -> str:
    """One value as TOML text (the right-hand side of ``key = value``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return toml_value(value.value)
    if isinstance(value, (int, float)):
        return repr(value)  # inf and nan are written as TOML spells them
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, os.PathLike):
        return _string(os.fspath(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if value is None:
        raise TypeError("TOML has no null: leave the key out instead of writing None")
    raise TypeError(f"cannot write a {type(value).__name__} to TOML")


def dumps_toml(data: Mapping[str, Any], *, inline: Collection[str] = ()) -> str:
    """A whole document: scalars first, then each nested mapping as a ``[dotted.table]``.

    Mappings under a key named in ``inline`` stay on one line (``options = {r = 8}``), which
    reads better for small option sets and keeps an empty one visible.
    """
    lines: list[str] = []

    def table(prefix: str, mapping: Mapping[str, Any]) -> None:
        nested = {k: v for k, v in mapping.items() if isinstance(v, Mapping) and k not in inline}
        if prefix:
            lines.append(f"\n[{prefix}]")
        for key, value in mapping.items():
            if key not in nested:
                lines.append(f"{toml_key(key)} = {toml_value(value)}")
        for key, value in nested.items():
            table(f"{prefix}.{toml_key(key)}" if prefix else toml_key(key), value)

    table("", data)
    return "\n".join(lines).lstrip("\n") + "\n"


def _string(text: str) -> str:
    # JSON's escapes are all valid in a TOML basic string; TOML also forbids a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
