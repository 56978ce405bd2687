"""One catalog of user-facing strings, in English and Simplified Chinese.

The strings live in ``localqwen/locales/<lang>.toml`` (flat ``key = "text"`` tables, grouped by
section). The language follows the system locale unless the config's ``[app] language`` says
otherwise, and frontends switch it at run time with :func:`set_language`. A key missing from the
chosen language falls back to English, then to the key itself, so a gap never crashes a view.
"""

from __future__ import annotations

import contextlib
import locale
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

LOCALES_DIR = Path(__file__).parent / "locales"
LANGUAGES = {"en": "English", "zh": "简体中文"}
DEFAULT_LANGUAGE = "en"

_current: str | None = None


@cache
def catalog(language: str) -> dict[str, str]:
    """The flattened catalog for ``language`` (``section.key`` -> text)."""
    path = LOCALES_DIR / f"{language}.toml"
    if not path.exists():
        return {}
    with path.open("rb") as handle:
        raw = tomllib.load(handle)
    return dict(_flatten(raw))


def _flatten(table: dict[str, Any], prefix: str = ""):
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _flatten(value, name + ".")
        else:
            yield name, str(value)


def detect_language() -> str:
    """The system locale's language if we have it (``zh_CN.UTF-8`` -> ``zh``), else English."""
    candidates = [os.environ.get(name, "") for name in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE")]
    with contextlib.suppress(ValueError):  # an unparsable locale setting must not stop the app
        candidates.append(locale.getlocale()[0] or "")
    for value in candidates:
        code = value.split(":")[0].split(".")[0].split("_")[0].split("-")[0].lower()
        if code in LANGUAGES:
            return code
        if code and code not in ("c", "posix"):
            return DEFAULT_LANGUAGE
    return DEFAULT_LANGUAGE


def resolve_language(setting: str | None) -> str:
    """Turn a config value (``auto``, ``en``, ``zh``) into a language we have."""
    if setting in LANGUAGES:
        return setting  # type: ignore[return-value]
    return detect_language()


def set_language(language: str) -> str:
    """Switch every later :func:`t` call to ``language`` (``auto`` follows the locale)."""
    global _current
    _current = resolve_language(language)
    return _current


def current_language() -> str:
    if _current is None:
        return set_language("auto")
    return _current


def t(key: str, /, **values: Any) -> str:
    """The text for ``key`` in the current language, with ``{name}`` placeholders filled."""
    text = catalog(current_language()).get(key) or catalog(DEFAULT_LANGUAGE).get(key) or key
    if values:
        try:
            return text.format(**values)
        except (KeyError, IndexError, ValueError):
            return text
    return text
