"""The memory plugin's prompts: one editable YAML file in the config folder.

The defaults ship in the package (``default_prompts.yaml``, documented there) and are copied to
``<config>/memory/prompts.yaml`` on first use. A key missing from the user's copy takes its
default; a copy that does not parse, or a prompt that uses a placeholder the plugin does not
fill, raises :class:`PromptsError` naming the file and the key, instead of failing mid-chat.
"""

from __future__ import annotations

import shutil
import string
from importlib import resources
from pathlib import Path
from typing import Any

DEFAULTS_NAME = "default_prompts.yaml"
# The placeholders each prompt is given (a prompt may use fewer).
PLACEHOLDERS = {
    ("extraction", "system"): set(),
    ("extraction", "turn"): {"date", "user", "assistant"},
    ("extraction", "retry"): {"error"},
    ("recall", "system"): {"today", "persona", "memories"},
    ("recall", "memory"): {"id", "date", "source", "text"},
    ("recall", "empty"): {"today", "persona"},
}


class PromptsError(ValueError):
    """The prompts file cannot be used; the message names the file and the key."""


def default_text() -> str:
    return resources.files("localqwen_memory").joinpath(DEFAULTS_NAME).read_text(encoding="utf-8")


def prompts_file(config_dir: Path) -> Path:
    return Path(config_dir) / "memory" / "prompts.yaml"


def ensure_prompts_file(config_dir: Path) -> Path:
    """The user's prompts file, copied from the defaults if it does not exist yet."""
    path = prompts_file(config_dir)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with resources.as_file(resources.files("localqwen_memory").joinpath(DEFAULTS_NAME)) as source:
            shutil.copyfile(source, path)
    return path


class Prompts:
    """Prompt templates by (section, key); ``format`` fills one in."""

    def __init__(self, values: dict[tuple[str, str], str], source: str = "defaults") -> None:
        self.values = values
        self.source = source

    @classmethod
    def load(cls, config_dir: Path | None = None) -> Prompts:
        """The user's prompts over the defaults (just the defaults when ``config_dir`` is None)."""
        import yaml

        values = _flatten(yaml.safe_load(default_text()), DEFAULTS_NAME)
        source = "defaults"
        if config_dir is not None:
            path = ensure_prompts_file(config_dir)
            try:
                user = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            except yaml.YAMLError as exc:
                raise PromptsError(f"{path}: not valid YAML: {exc}") from None
            values.update(_flatten(user, str(path)))
            source = str(path)
        for key, text in values.items():
            _check(key, text, source)
        return cls(values, source)

    def text(self, section: str, key: str) -> str:
        return self.values[(section, key)]

    def format(self, section: str, key: str, **fields: Any) -> str:
        return self.values[(section, key)].format(**fields)


def _flatten(data: Any, source: str) -> dict[tuple[str, str], str]:
    if not isinstance(data, dict):
        raise PromptsError(f"{source}: expected sections (extraction:, recall:) at the top")
    values = {}
    for section, entries in data.items():
        if not isinstance(entries, dict):
            raise PromptsError(f"{source}: section '{section}' must hold key: text pairs")
        for key, text in entries.items():
            if (section, key) not in PLACEHOLDERS:
                known = ", ".join(f"{s}.{k}" for s, k in PLACEHOLDERS)
                raise PromptsError(f"{source}: unknown prompt '{section}.{key}' (known: {known})")
            if not isinstance(text, str) or not text.strip():
                raise PromptsError(f"{source}: prompt '{section}.{key}' must be non-empty text")
            values[(section, key)] = text
    return values


def _check(key: tuple[str, str], text: str, source: str) -> None:
    try:
        used = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError as exc:
        raise PromptsError(f"{source}: prompt '{key[0]}.{key[1]}': {exc} (write literal braces as {{{{ and }}}})") from None
    unknown = used - PLACEHOLDERS[key]
    if unknown:
        allowed = ", ".join(sorted(PLACEHOLDERS[key])) or "none"
        raise PromptsError(f"{source}: prompt '{key[0]}.{key[1]}' uses {{{', '.join(sorted(unknown))}}}; "
                           f"it may use: {allowed}")
