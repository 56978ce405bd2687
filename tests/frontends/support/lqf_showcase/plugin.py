"""Showcase plugin: every Widget kind in one form, every event kind in one run, and a fast text
generator for the streaming benchmarks. Registered by the frontends tests through a real entry point."""

from __future__ import annotations

import struct
import time
import zlib
from pathlib import Path
from typing import Literal

from localqwen.plugin_api import Context, Form, Plugin, Requirements, action, field
from localqwen.plugin_api import events as ev


class EverythingForm(Form):
    title: str = field("demo", label="Title", help="A one-line text.")
    notes: str = field("", label="Notes", widget="textarea")
    count: int = field(3, label="Count", widget="number", ge=1, le=100)
    temperature: float = field(0.5, label="Temperature", ge=0.0, le=2.0, step=0.1)
    mode: Literal["fast", "careful"] = field("fast", label="Mode")
    tags: list[Literal["red", "green", "blue"]] = field(default_factory=lambda: ["red"], label="Tags")
    enabled: bool = field(True, label="Enabled")
    picture: Path | None = field(None, label="Picture", widget="image")
    document: Path | None = field(None, label="Document", widget="file")
    folder: Path | None = field(None, label="Folder", widget="folder", advanced=True)


class GenerateForm(Form):
    tokens: int = field(200, label="Tokens", ge=1, le=1_000_000)


def write_png(path: Path, width: int = 16, height: int = 16) -> Path:
    """A small gradient PNG written with zlib only (no PIL needed in the plugin)."""
    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 16 % 256, y * 16 % 256, 128)) for x in range(width)) for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    path.write_bytes(png)
    return path


class ShowcasePlugin(Plugin):
    id = "showcase"
    title = "Showcase"
    description = "Every form widget and event kind; used by the frontend tests."
    requirements = Requirements(task="none")

    @action(form=EverythingForm, title="Everything", description="Emit one of every event.")
    def everything(self, form: EverythingForm, ctx: Context):
        yield ev.Step(step="prepare", title="Prepare")
        yield ev.TextDelta(text=f"Preparing **{form.title}**\n", step="prepare")
        yield ev.Step(step="prepare", title="Prepare", status="finished", elapsed_s=0.01)
        tracker = ev.ProgressTracker(form.count, unit="item", message="working")
        for index in range(form.count):
            yield tracker.advance()
            yield ev.Metric(step=index, values={"loss": 1.0 / (index + 1)})
        yield ev.TextDelta(text=f"Mode {form.mode}, tags {', '.join(form.tags)}, enabled={form.enabled}\n")
        yield ev.ToolCall(name="lookup", arguments={"query": form.title}, result="found")
        image = write_png(ctx.outputs_dir / "gradient.png")
        yield ev.Image(path=str(image), caption="a gradient")
        yield ev.Table(columns=["key", "value"], rows=[["title", form.title], ["count", form.count]], title="Inputs")
        report = ctx.outputs_dir / "report.txt"
        report.write_text(f"{form.title}\n", encoding="utf-8")
        yield ev.FileWritten(path=str(report), description="the report")
        yield ev.Log(message="wrote the report")
        yield ev.Warning(message="this is only a showcase")
        yield ev.Done(summary="showcase finished", result={"title": form.title})

    @action(form=GenerateForm, title="Generate", description="Stream words as fast as possible.")
    def generate(self, form: GenerateForm, ctx: Context):
        start = time.perf_counter()
        for index in range(form.tokens):
            yield ev.TextDelta(text=f"word{index % 97} ")
        yield ev.Done(result={"tokens": form.tokens, "seconds": time.perf_counter() - start})
