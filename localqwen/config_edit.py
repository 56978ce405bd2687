"""Change one setting in the TOML config file, keeping the user's comments and layout.

The frontends' settings screens (language, the model a plugin uses) go through here. The edited
text is validated with the real config parser before it replaces the file atomically, so a bad
value never leaves a broken config behind.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from localqwen.atomic import atomic_write_text
from localqwen.config import Config, parse_config_text, read_config_text
from localqwen.storage.file_lock import FileLock
from localqwen.vocabulary.toml_writer import toml_value

_HEADER = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")


def set_config_value(path: Path, section: str, key: str, value: Any) -> Config:
    """Set ``[section] key = value`` in the file at ``path`` and return the new config.

    ``section`` is dotted for nested tables (``plugins.captioner``). Raises ``ConfigError`` if
    the result would not be a valid config; the file is then left as it was.
    """
    # Read, change, write under the file's lock: two settings saved at once (two pickers in the web
    # view, the TUI beside it) would otherwise each write back a file without the other's change.
    with FileLock(path.with_name(path.name + ".lock")):
        text = read_config_text(path) if path.exists() else ""
        new_text = _with_value(text, section, key, toml_value(value))
        config = parse_config_text(new_text, path)
        atomic_write_text(path, new_text)
    return config


def _with_value(text: str, section: str, key: str, rendered: str) -> str:
    lines = text.splitlines()
    start = end = None
    for index, line in enumerate(lines):
        match = _HEADER.match(line)
        if not match:
            continue
        if start is not None:
            end = index
            break
        if match.group(1).strip() == section:
            start = index
    assignment = f"{key} = {rendered}"
    if start is None:
        block = ([""] if lines and lines[-1].strip() else []) + [f"[{section}]", assignment]
        return "\n".join(lines + block) + "\n"
    end = len(lines) if end is None else end
    key_line = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for index in range(start + 1, end):
        if key_line.match(lines[index]):
            lines[index] = assignment
            return "\n".join(lines) + "\n"
    lines.insert(start + 1, assignment)
    return "\n".join(lines) + "\n"
