"""The native tool-calling loop: model -> tool calls -> results -> model, until it answers.

Qwen models call tools by writing ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
every engine backend parses those into ``engine.last_result.tool_calls``. This loop offers the
tools' JSON schemas to the model, runs the calls it makes, appends the assistant message (with its
``tool_calls``) and one ``{"role": "tool", ...}`` message per call, and asks again::

    weather = Tool("get_weather", "Weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                   lambda city: f"sunny in {city}")
    result = yield from run_tool_loop(engine, messages, [weather], max_rounds=3, cancel=ctx.cancel)
    result.answer, result.messages, result.runs

It is a generator: the events go up to whoever iterates it (``TextDelta`` for the model's visible
text, one ``ToolCall`` with its result per call, a ``Warning`` when the round limit stops it) and
its *return value* is a :class:`ToolLoopResult`, which ``yield from`` hands back. A model mistake
(an unknown tool, arguments that don't fit the schema, a tool that reports a problem) never
raises: it becomes an ``error: ...`` result the model reads and can correct. Cancellation raises
``Cancelled`` between generations and before each tool, like every other runtime stream.
RAG, the safari agent and the medical auditor all call tools through here; :func:`run_tool`
runs one parsed call on its own for a caller that drives the turns itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import Cancelled, CancelToken

if TYPE_CHECKING:
    from localqwen.runtime.engine.base import ChatResult, Engine, GenerationSettings

_CALL_OPEN = "<tool_call>"
ERROR_PREFIX = "error: "


class ToolError(Exception):
    """Raised by a tool (or its ``check``) to tell the model what was wrong; never reaches the user as a crash."""


@dataclass
class Tool:
    """One function the model may call: its name, what it does, its JSON-schema parameters.

    ``function`` is called with the arguments as keyword arguments once they fit ``parameters``
    (types, required, enum, bounds; unknown arguments are refused unless the schema sets
    ``additionalProperties``). ``check`` may look further (e.g. a move into water) and raise
    :class:`ToolError` or ``ValueError``; so may ``function``. Its return value becomes the text the
    model reads: a string as is, anything else as JSON.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    check: Callable[[dict[str, Any]], None] | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"tool name {self.name!r} must be letters, digits, '_' or '-'")
        if self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be a JSON schema of type 'object'")

    def schema(self) -> dict[str, Any]:
        """The shape chat templates and OpenAI-compatible servers take in ``tools=[...]``."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    def problems(self, arguments: Any) -> list[str]:
        """Why ``arguments`` don't fit the schema (empty list = they do)."""
        return schema_problems(arguments, self.parameters, "arguments")


@dataclass
class ToolRun:
    """One call the model made and what came of it."""

    name: str
    arguments: dict[str, Any]
    result: str  # what the model reads; starts with "error: " when the call failed
    ok: bool
    value: Any = None  # the tool function's own return value (None when it failed)

    def message(self) -> dict[str, Any]:
        return {"role": "tool", "name": self.name, "content": self.result}

    def event(self) -> ev.ToolCall:
        return ev.ToolCall(name=self.name, arguments=dict(self.arguments), result=self.result)


@dataclass
class ToolLoopResult:
    messages: list[dict[str, Any]]  # the input plus every assistant and tool message the loop added
    answer: str  # the last reply's text, tool-call blocks removed
    runs: list[ToolRun] = field(default_factory=list)
    rounds: int = 0  # how many rounds of tool calls were run
    stopped: Literal["answer", "max_rounds"] = "answer"
    last: ChatResult | None = None  # the last generation (token counts, finish reason)


def run_tool(tools: Mapping[str, Tool] | Iterable[Tool], name: str, arguments: Any) -> ToolRun:
    """Run one call: unknown tools, bad arguments and tool errors come back as error results."""
    by_name = tools if isinstance(tools, Mapping) else _index(tools)
    arguments = arguments if isinstance(arguments, dict) else {"value": arguments}
    tool = by_name.get(name)
    if tool is None:
        known = ", ".join(sorted(by_name)) or "none"
        return _failed(name, arguments, f"unknown tool {name!r}; the tools are: {known}")
    problems = tool.problems(arguments)
    if problems:
        return _failed(name, arguments, f"bad arguments for {name}: " + "; ".join(problems))
    try:
        if tool.check is not None:
            tool.check(dict(arguments))
        value = tool.function(**arguments)
    except (ToolError, ValueError) as exc:
        return _failed(name, arguments, f"{name} failed: {exc}")
    return ToolRun(name, arguments, _as_text(value), True, value)


def run_tool_loop(engine: Engine, messages: Sequence[dict[str, Any]], tools: Sequence[Tool], *,
                  settings: GenerationSettings | None = None, cancel: CancelToken | None = None,
                  max_rounds: int = 4, step: str | None = None) -> Generator[Any, None, ToolLoopResult]:
    """Let the model call ``tools`` for up to ``max_rounds`` rounds, then return its answer.

    A round is one reply with tool calls plus running them. When the model still calls tools after
    ``max_rounds`` rounds, those calls are not run: a ``Warning`` says so and the loop ends with
    ``stopped="max_rounds"`` (the reply's text, without its calls, closes ``messages``). ``step``
    puts the streamed text in a step panel instead of the answer. ``messages`` is not modified.
    """
    if max_rounds < 0:
        raise ValueError(f"max_rounds must be 0 or more, got {max_rounds}")
    by_name = _index(tools)
    schemas = [tool.schema() for tool in tools] or None
    conversation = [dict(message) for message in messages]
    runs: list[ToolRun] = []
    shown_text = False
    rounds = 0
    while True:
        _stop_if_cancelled(cancel)
        hide = _HideCallBlocks()
        new_paragraph = shown_text  # a later round's text starts a new paragraph
        for visible in hide.stream(engine.stream(conversation, tools=schemas, settings=settings, cancel=cancel)):
            if new_paragraph:
                yield ev.TextDelta(text="\n\n", step=step)
                new_paragraph = False
            shown_text = True
            yield ev.TextDelta(text=visible, step=step)
        result = engine.last_result
        assert result is not None, "the engine finished a stream without a result"
        if result.finish_reason == "cancelled":
            raise Cancelled(cancel.reason if cancel is not None else "cancelled")
        if not result.tool_calls:
            conversation.append(result.to_message())
            return ToolLoopResult(conversation, result.text, runs, rounds, "answer", result)
        if rounds >= max_rounds:
            asked = ", ".join(call.name for call in result.tool_calls)
            yield ev.Warning(message=f"stopped after {max_rounds} round(s) of tool calls: the model still asked "
                                     f"for {asked}, which did not run")
            conversation.append({"role": "assistant", "content": result.text})
            return ToolLoopResult(conversation, result.text, runs, rounds, "max_rounds", result)
        rounds += 1
        conversation.append(result.to_message())
        for call in result.tool_calls:
            _stop_if_cancelled(cancel)
            run = run_tool(by_name, call.name, call.arguments)
            runs.append(run)
            yield run.event()
            conversation.append(run.message())


# -- argument checking --------------------------------------------------------------------------
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}


def schema_problems(value: Any, schema: Mapping[str, Any], where: str) -> list[str]:
    """The JSON-schema subset tool parameters use: type, enum, required, properties,
    additionalProperties, items, min/max, minItems/maxItems, minLength/maxLength."""
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, name) for name in names):
            return [f"{where} must be {' or '.join(names)}, got {_describe(value)}"]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where} must be one of {', '.join(json.dumps(v) for v in schema['enum'])}, "
                        f"got {json.dumps(value, ensure_ascii=False, default=str)}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where} must be at least {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where} must be at most {schema['maximum']}, got {value}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append(f"{where} must have at least {schema['minLength']} character(s)")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{where} must have at most {schema['maxLength']} character(s)")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append(f"{where} must have at least {schema['minItems']} item(s), got {len(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{where} must have at most {schema['maxItems']} item(s), got {len(value)}")
        if isinstance(schema.get("items"), Mapping):
            for index, item in enumerate(value):
                problems += schema_problems(item, schema["items"], f"{where}[{index}]")
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                problems.append(f"missing required argument {name!r}")
        extra = schema.get("additionalProperties", False)
        for name, item in value.items():
            if name in properties:
                problems += schema_problems(item, properties[name], name if where == "arguments" else f"{where}.{name}")
            elif extra is False:
                known = ", ".join(properties) or "none"
                problems.append(f"unknown argument {name!r} (expected: {known})")
            elif isinstance(extra, Mapping):
                problems += schema_problems(item, extra, name)
    return problems


def _is_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False  # JSON true is not a number, though Python's bool is an int
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(name, (object,)))


def _describe(value: Any) -> str:
    kind = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)
    return f"{kind} ({json.dumps(value, ensure_ascii=False, default=str)[:60]})"


# -- helpers ------------------------------------------------------------------------------------
def _index(tools: Iterable[Tool]) -> dict[str, Tool]:
    by_name: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in by_name:
            raise ValueError(f"two tools are named {tool.name!r}")
        by_name[tool.name] = tool
    return by_name


def _failed(name: str, arguments: dict[str, Any], message: str) -> ToolRun:
    return ToolRun(name, arguments, ERROR_PREFIX + message, False)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _stop_if_cancelled(cancel: CancelToken | None) -> None:
    if cancel is not None:
        cancel.raise_if_cancelled()


class _HideCallBlocks:
    """Passes streamed text through until a ``<tool_call>`` block starts; hides it and what follows.

    Only a possible beginning of ``<tool_call>`` at the end of a delta is held back, so the
    answer still streams delta by delta."""

    def __init__(self) -> None:
        self._pending = ""
        self._hiding = False

    def feed(self, delta: str) -> str:
        if self._hiding:
            return ""
        text = self._pending + delta
        found = text.find(_CALL_OPEN)
        if found >= 0:
            self._hiding, self._pending = True, ""
            return text[:found]
        keep = next((n for n in range(min(len(text), len(_CALL_OPEN) - 1), 0, -1)
                     if _CALL_OPEN.startswith(text[-n:])), 0)
        self._pending = text[len(text) - keep:] if keep else ""
        return text[: len(text) - keep]

    def finish(self) -> str:
        rest, self._pending = ("" if self._hiding else self._pending), ""
        return rest

    def stream(self, deltas: Iterable[str]) -> Iterator[str]:
        """The visible, non-empty pieces of ``deltas``."""
        for delta in deltas:
            visible = self.feed(delta)
            if visible:
                yield visible
        rest = self.finish()
        if rest:
            yield rest
