"""The shared tool-calling loop on the transformers backend, with a tiny Qwen3 taught (jointly, a
few seconds) to really generate these replies:

- the Paris question -> a short preamble and a ``get_weather`` call; after the tool's result -> an answer;
- the Rome question -> a call to ``get_forecast``, a tool that does not exist;
- the Oslo question -> ``get_weather`` with a wrong argument name.

So the calls the loop parses, runs and feeds back are text a real model generated."""

from __future__ import annotations

import pytest
from event_streams import drain

from localqwen.runtime.engine import GenerationSettings
from localqwen.runtime.tool_loop import (
    Tool,
    ToolError,
    ToolLoopResult,
    _HideCallBlocks,
    run_tool,
    run_tool_loop,
    schema_problems,
)
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import Cancelled, CancelToken

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER_SCHEMA = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                                   "parameters": PARAMETERS}}
SETTINGS = GenerationSettings(max_new_tokens=48)


def call_text(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


def ask(city: str) -> list[dict]:
    return [{"role": "user", "content": f"What is the weather in {city}?"}]


PARIS_AFTER_RESULT = [
    *ask("Paris"),
    {"role": "assistant", "content": "Let me check.",
     "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "name": "get_weather", "content": "sunny, 21 C in Paris"},
]
EXAMPLES = [
    (ask("Paris"), "Let me check.\n" + call_text("get_weather", '{"city": "Paris"}')),
    (PARIS_AFTER_RESULT, "It is sunny in Paris."),
    (ask("Rome"), call_text("get_forecast", '{"city": "Rome"}')),
    (ask("Oslo"), call_text("get_weather", '{"town": "Oslo"}')),
]


def teach_replies(model_path, out, examples, tools, steps: int = 300):
    """Like ``localqwen.testing.tiny_models.teach_reply``, for several conversations at once
    (teaching them one after another would make the model forget the earlier ones). Stops as soon
    as every reply token is the model's top choice with some margin, which is what greedy
    generation needs to say the replies back."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    batches = []
    for messages, reply in examples:
        prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
        prompt_ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").input_ids
        reply_ids = tokenizer(reply + "<|im_end|>", add_special_tokens=False, return_tensors="pt").input_ids
        ids = torch.cat([prompt_ids, reply_ids], dim=1)
        labels = ids.clone()
        labels[:, : prompt_ids.shape[1]] = -100
        batches.append((ids, labels))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        outputs = [model(input_ids=ids, labels=labels) for ids, labels in batches]
        learnt = all(out.loss.item() < 0.1 and _top_choice_everywhere(out.logits, ids, labels)
                     for out, (ids, labels) in zip(outputs, batches, strict=True))
        if learnt:
            break
        sum(out.loss for out in outputs).backward()
        optimizer.step()
        optimizer.zero_grad()
    else:
        raise AssertionError(f"the tiny model did not learn the replies in {steps} steps")
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    return out


def _top_choice_everywhere(logits, ids, labels) -> bool:
    reply = labels[0, 1:] != -100
    return bool((logits[0, :-1].argmax(-1) == ids[0, 1:])[reply].all())


@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_qwen3_path):
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    taught = teach_replies(tiny_qwen3_path, tmp_path_factory.mktemp("weather_model"), EXAMPLES, [WEATHER_SCHEMA])
    with TransformersEngine(taught) as loaded:
        yield loaded


def weather_tool(seen: list | None = None) -> Tool:
    def get_weather(city: str) -> str:
        if seen is not None:
            seen.append(city)
        return f"sunny, 21 C in {city}"

    return Tool("get_weather", "Weather for a city", PARAMETERS, get_weather)


def drive(loop) -> tuple[list, ToolLoopResult]:
    """Iterate a loop to its end: its events and its return value."""
    return drain(loop)


def test_model_calls_the_tool_reads_the_result_and_answers(engine):
    seen: list[str] = []
    question = ask("Paris")
    collected, result = drive(run_tool_loop(engine, question, [weather_tool(seen)], settings=SETTINGS))
    assert seen == ["Paris"]
    calls = [e for e in collected if isinstance(e, ev.ToolCall)]
    assert [(c.name, c.arguments, c.result) for c in calls] == [("get_weather", {"city": "Paris"}, "sunny, 21 C in Paris")]
    # The preamble streams, the call block does not; the answer follows in a new paragraph.
    shown = "".join(e.text for e in collected if isinstance(e, ev.TextDelta))
    assert "<tool_call>" not in shown and shown.startswith("Let me check.") and shown.endswith("It is sunny in Paris.")
    assert collected.index(calls[0]) < max(i for i, e in enumerate(collected) if isinstance(e, ev.TextDelta))
    assert result.answer == "It is sunny in Paris." and result.stopped == "answer" and result.rounds == 1
    # The conversation the model saw: the input (untouched), its call, the tool's result, its answer.
    assert result.messages[:3] == PARIS_AFTER_RESULT
    assert result.messages[3] == {"role": "assistant", "content": "It is sunny in Paris."}
    assert question == ask("Paris") and result.runs[0].ok and result.last.finish_reason == "stop"


def test_text_goes_to_a_step_panel_when_asked(engine):
    collected, _ = drive(run_tool_loop(engine, ask("Paris"), [weather_tool()], settings=SETTINGS, step="tools"))
    assert {e.step for e in collected if isinstance(e, ev.TextDelta)} == {"tools"}


def test_unknown_tool_becomes_an_error_the_model_reads(engine):
    collected, result = drive(run_tool_loop(engine, ask("Rome"), [weather_tool()], settings=SETTINGS, max_rounds=1))
    first = next(e for e in collected if isinstance(e, ev.ToolCall))
    assert first.name == "get_forecast"
    assert first.result == "error: unknown tool 'get_forecast'; the tools are: get_weather"
    assert result.messages[2] == {"role": "tool", "name": "get_forecast", "content": first.result}
    assert not result.runs[0].ok and result.runs[0].value is None


def test_bad_arguments_become_an_error_the_model_reads(engine):
    seen: list[str] = []
    collected, result = drive(run_tool_loop(engine, ask("Oslo"), [weather_tool(seen)], settings=SETTINGS, max_rounds=1))
    first = next(e for e in collected if isinstance(e, ev.ToolCall))
    assert first.arguments == {"town": "Oslo"} and seen == []
    assert first.result == ("error: bad arguments for get_weather: missing required argument 'city'; "
                            "unknown argument 'town' (expected: city)")
    assert result.messages[2]["content"] == first.result


def test_round_limit_stops_with_a_warning_and_runs_nothing_more(engine):
    seen: list[str] = []
    collected, result = drive(run_tool_loop(engine, ask("Paris"), [weather_tool(seen)], settings=SETTINGS, max_rounds=0))
    assert seen == [] and not [e for e in collected if isinstance(e, ev.ToolCall)]
    warning = next(e for e in collected if isinstance(e, ev.Warning))
    assert "stopped after 0 round(s) of tool calls" in warning.message and "get_weather" in warning.message
    assert result.stopped == "max_rounds" and result.answer == "Let me check."
    # The conversation stays well formed: no assistant tool call is left without its result.
    assert result.messages[-1] == {"role": "assistant", "content": "Let me check."}


def test_cancel_in_a_tool_stops_before_the_model_runs_again(engine):
    cancel = CancelToken()

    def get_weather(city: str) -> str:
        cancel.cancel("user pressed stop")
        return "sunny"

    tool = Tool("get_weather", "Weather for a city", PARAMETERS, get_weather)
    collected = []
    with pytest.raises(Cancelled, match="user pressed stop"):
        for event in run_tool_loop(engine, ask("Paris"), [tool], settings=SETTINGS, cancel=cancel):
            collected.append(event)
    calls = [e for e in collected if isinstance(e, ev.ToolCall)]
    assert len(calls) == 1 and not any("sunny in Paris" in getattr(e, "text", "") for e in collected)


def test_cancel_before_the_start_runs_nothing(engine):
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        next(run_tool_loop(engine, ask("Paris"), [weather_tool()], settings=SETTINGS, cancel=cancel))


# -- one call at a time, and the argument checks -------------------------------------------------
def test_run_tool_reports_tool_errors_and_returns_values_as_json():
    def area(width: int, height: int = 1) -> dict:
        if width > 100:
            raise ToolError("too wide for this field")
        return {"area": width * height}

    def not_water(arguments: dict) -> None:
        if arguments["width"] == 13:
            raise ValueError("that cell is water")

    tool = Tool("area", "Area of a field", {"type": "object", "required": ["width"], "properties": {
        "width": {"type": "integer", "minimum": 1}, "height": {"type": "integer"}}}, area, check=not_water)
    ok = run_tool([tool], "area", {"width": 3, "height": 2})
    assert ok.ok and ok.result == '{"area": 6}' and ok.value == {"area": 6}
    assert ok.message() == {"role": "tool", "name": "area", "content": '{"area": 6}'}
    assert run_tool([tool], "area", {"width": 101}).result == "error: area failed: too wide for this field"
    assert run_tool([tool], "area", {"width": 13}).result == "error: area failed: that cell is water"
    assert run_tool([tool], "area", {"width": 0}).result == "error: bad arguments for area: width must be at least 1, got 0"
    assert run_tool([tool], "area", "7").result == ("error: bad arguments for area: missing required argument 'width'; "
                                                    "unknown argument 'value' (expected: width, height)")


def test_schema_problems_name_each_mistake():
    schema = {"type": "object", "required": ["steps"], "properties": {
        "steps": {"type": "array", "minItems": 1, "maxItems": 4,
                  "items": {"type": "string", "enum": ["up", "down", "left", "right"]}},
        "note": {"type": "string", "maxLength": 5}, "fast": {"type": "boolean"}, "speed": {"type": "number"}}}
    assert schema_problems({"steps": ["up", "left"], "speed": 2}, schema, "arguments") == []
    assert schema_problems({"steps": ["up", "north"], "fast": 1}, schema, "arguments") == [
        'steps[1] must be one of "up", "down", "left", "right", got "north"',
        "fast must be boolean, got an integer (1)"]
    assert schema_problems({"steps": [], "note": "too long", "speed": True}, schema, "arguments") == [
        "steps must have at least 1 item(s), got 0", "note must have at most 5 character(s)",
        "speed must be number, got a boolean (true)"]
    assert schema_problems({"steps": ["up"] * 5}, schema, "arguments") == ["steps must have at most 4 item(s), got 5"]


def test_tools_are_declared_clearly():
    with pytest.raises(ValueError, match="must be a JSON schema of type 'object'"):
        Tool("x", "bad", {"type": "string"}, str)
    with pytest.raises(ValueError, match="letters, digits"):
        Tool("two words", "bad", PARAMETERS, str)
    with pytest.raises(ValueError, match="two tools are named 'get_weather'"):
        run_tool([weather_tool(), weather_tool()], "get_weather", {"city": "Paris"})
    assert weather_tool().schema() == WEATHER_SCHEMA


def test_call_blocks_are_hidden_even_when_split_across_deltas():
    hide = _HideCallBlocks()
    pieces = ["Let me", " check <", "tool", "_ca", "ll>\n{\"name\"", ": 1}</tool_call>", " after"]
    assert "".join(hide.stream(pieces)) == "Let me check "
    # A "<" that turns out not to open a call is shown, only later.
    assert list(_HideCallBlocks().stream(["a <", "b", " <tool"])) == ["a ", "<b", " ", "<tool"]
