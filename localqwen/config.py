"""The TOML config file: one ``[app]`` and ``[runtime]`` section, and ``[plugins.<id>]`` per plugin.

A broken file never stops the app: :func:`load_config` reports the file and line and hands back
the defaults, so the user can start LocalQwen and fix it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localqwen.atomic import atomic_write_text
from localqwen.vocabulary.toml_writer import toml_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


class AppSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: Literal["auto", "en", "zh"] = Field("auto", description="UI language; auto follows the locale.")
    theme: str = Field("textual-dark", description="TUI theme name.")


class RuntimeSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hub: Literal["huggingface", "modelscope"] = Field("huggingface", description="Where models download from.")
    offline: bool = Field(False, description="Never touch the network; use cached or local models only.")
    device: Literal["auto", "cuda", "mps", "cpu"] = Field("auto", description="Force a device.")
    remote_url: str = Field("", description="OpenAI-compatible server (e.g. vLLM) to use as the engine.")
    remote_api_key_env: str = Field("", description="Environment variable that holds the remote API key.")
    trust_remote_code: list[str] = Field(
        default_factory=list, description="Model ids allowed to run their own code (off for all by default)."
    )


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid")
    app: AppSection = Field(default_factory=lambda: AppSection())
    runtime: RuntimeSection = Field(default_factory=lambda: RuntimeSection())
    plugins: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def plugin_section(self, plugin_id: str) -> dict[str, Any]:
        return dict(self.plugins.get(plugin_id, {}))


class ConfigError(Exception):
    """The config file exists but cannot be used; says which file and, where known, which line."""

    def __init__(self, path: Path, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")


_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def parse_config_text(text: str, path: Path) -> Config:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_POSITION.search(str(exc))
        line = int(match.group(1)) if match else getattr(exc, "lineno", None)
        raise ConfigError(path, f"not valid TOML: {exc}", line) from exc
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(path, problems, _line_of_key(text, exc.errors()[0]["loc"])) from exc


def read_config_text(path: Path) -> str:
    """The file's text, or a :class:`ConfigError` saying why it cannot be read (never a traceback)."""
    if path.is_dir():
        raise ConfigError(path, "is a folder, but the config must be a file: move the folder away "
                                "(LocalQwen then starts with defaults and writes a new file when you save a setting)")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(path, f"cannot be read: {exc.strerror or exc}") from None


def check_plugin_section(path: Path, plugin_id: str, model: type[BaseModel], section: dict[str, Any]) -> BaseModel:
    """Validate ``[plugins.<plugin_id>]`` with the plugin's settings model; a wrong value raises a
    :class:`ConfigError` naming the file, the key and (when it can be found) its line."""
    try:
        return model.model_validate(section)
    except ValidationError as exc:
        errors = exc.errors()
        problems = "; ".join(
            f"plugins.{plugin_id}.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
            + (f" (got {err['input']!r})" if "input" in err and not isinstance(err["input"], dict) else "")
            for err in errors)
        try:
            text = read_config_text(path) if path.exists() else ""
        except ConfigError:
            text = ""
        first = errors[0]["loc"][0] if errors and errors[0]["loc"] else None
        line = _line_in_section(text, f"plugins.{plugin_id}", str(first)) if first is not None else None
        raise ConfigError(path, problems, line) from None


_TABLE = re.compile(r"^\s*\[([^\[\]]+)\]")


def _line_in_section(text: str, section: str, key: str) -> int | None:
    """The line of ``key = ...`` inside ``[section]`` (or written ``section.key = ...`` above any table)."""
    current = ""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = _TABLE.match(line)
        if header:
            current = header.group(1).strip().replace(" ", "")
            continue
        name = stripped.split("=", 1)[0].strip().strip('"') if "=" in stripped else ""
        if (current == section and name == key) or f"{current}.{name}".lstrip(".") == f"{section}.{key}":
            return number
    return None


def _line_of_key(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best effort: the line where the offending key is written, so the error can point at it."""
    if not loc:
        return None
    key = str(loc[-1])
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith(f"{key} ") or stripped.startswith(f"{key}=") or stripped == f"[{key}]":
            return number
    return None


def load_config(path: Path, *, strict: bool = False) -> tuple[Config, ConfigError | None]:
    """Read ``path``. A missing file means defaults. A broken one (or a folder, or one that cannot
    be read) gives defaults plus the error, or raises it when ``strict``."""
    if not path.exists():
        return Config(), None
    try:
        text = read_config_text(path)
    except ConfigError as exc:
        error = exc
    else:
        try:
            return parse_config_text(text, path), None
        except ConfigError as exc:
            error = exc
    if strict:
        raise error
    return Config(), error


def default_config_text(plugin_sections: dict[str, type[BaseModel]] | None = None) -> str:
    """A commented config file with every setting at its default, one section per plugin."""
    lines = ["# LocalQwen configuration. Delete a line to go back to its default.", ""]
    builtin: list[tuple[str, type[BaseModel]]] = [("app", AppSection), ("runtime", RuntimeSection)]
    for name, model in builtin:
        lines += _section_lines(name, model)
    for plugin_id, model in sorted((plugin_sections or {}).items()):
        lines += _section_lines(f"plugins.{plugin_id}", model)
    return "\n".join(lines) + "\n"


def _section_lines(name: str, model: type[BaseModel]) -> list[str]:
    lines = [f"[{name}]"]
    for field_name, info in model.model_fields.items():
        if info.description:
            lines.append(f"# {info.description}")
        default = info.get_default(call_default_factory=True)
        if default is None:  # TOML has no null: show the key, unset
            lines.append(f"# {field_name} =")
            continue
        lines.append(f"{field_name} = {toml_value(default)}")
    return lines + [""]


def write_default_config(path: Path, plugin_sections: dict[str, type[BaseModel]] | None = None) -> None:
    atomic_write_text(path, default_config_text(plugin_sections))
