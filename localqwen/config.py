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
    """Read ``path``. A missing file means defaults. A broken one gives defaults plus the error,
    or raises it when ``strict``."""
    if not path.exists():
        return Config(), None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        error = ConfigError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
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
