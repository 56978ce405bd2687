"""Test-only plugins that add to LocalQwen through ``register(extensions)``.

``Extender`` adds one of each kind (a trainer data source, a task metric, a tool, a CLI shortcut);
``BrokenHook`` registers a metric and then raises, so the host must drop it whole. Tests add them
inline with ``PluginHost.add`` or install them through real entry points (the CLI finds them so).
"""

from __future__ import annotations

import json
from pathlib import Path

from localqwen.plugin_api import Context, Extensions, Form, Plugin, Requirements, action, field
from localqwen.plugin_api import events as ev
from localqwen.runtime.tool_loop import Tool


def build_tiny_qa(out_dir: Path, n: int = 12) -> Path:
    """``n`` chat rows ("Say number i." -> the word) in train.jsonl, and two held-out ones in eval.jsonl."""
    words = ["zero", "one", "two"]

    def row(i: int) -> str:
        return json.dumps({"messages": [{"role": "user", "content": f"Say number {i % 3}."},
                                        {"role": "assistant", "content": words[i % 3]}]}) + "\n"

    train = out_dir / "train.jsonl"
    train.write_text("".join(row(i) for i in range(n)), encoding="utf-8")
    (out_dir / "eval.jsonl").write_text(row(0) + row(1), encoding="utf-8")
    return train


def length_ratio(predictions: list[str], references: list[str]) -> dict[str, float]:
    return {"length_ratio": sum(map(len, predictions)) / max(1, sum(map(len, references)))}


SHOUT = Tool("shout", "Upper-case a text", {"type": "object", "properties": {"text": {"type": "string"}},
                                            "required": ["text"]}, lambda text: text.upper())


class GreetForm(Form):
    name: str = field(label="Name", help="Who to greet.")
    times: int = field(1, label="Times", ge=1, le=3)


class Extender(Plugin):
    id = "extender"
    title = "Extender"
    description = "Adds a data source, a metric, a tool and a CLI shortcut."
    requirements = Requirements(task="none")

    @action(form=GreetForm, id="ext-greet", title="Greet", description="Greets someone.")
    def greet(self, form: GreetForm, ctx: Context):
        for _ in range(form.times):
            yield ev.TextDelta(text=f"hello {form.name}\n")
        yield ev.Done(result={"greeted": form.name, "times": form.times})

    def register(self, extensions: Extensions) -> None:
        extensions.add_data_source("tiny-qa", "Tiny number words", build_tiny_qa)
        extensions.add_metric("length-ratio", length_ratio)
        extensions.add_tool(SHOUT)
        extensions.add_shortcut("ext", "The extender's commands.", actions=("ext-greet",))


class BrokenHook(Plugin):
    id = "broken_hook"
    title = "Broken hook"
    requirements = Requirements(task="none")

    @action(form=GreetForm, description="Never reachable: the plugin is dropped.")
    def hello(self, form: GreetForm, ctx: Context):
        yield ev.Done()

    def register(self, extensions: Extensions) -> None:
        extensions.add_metric("half-registered", length_ratio)
        raise RuntimeError("no frobnicator for the hook")
