"""Summary memory: a long chat is sent as a summary of its older turns plus the recent turns.

Past a token budget the oldest messages are folded into a running summary kept in the session
metadata (``"summary"``: the text and how many history messages it covers), so each message is
summarised once. The model writes the summary when an engine is given (its prompt carries the
patient profile, so it does not contradict it); otherwise, or when the model fails, an
extractive summary keeps the sentences that carry facts (numbers, drugs, symptoms, questions).
Profile facts never depend on the summary: they live in the profile, and :func:`build_history`
puts the whole profile in front of every request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from localqwen.plugin_api import Cancelled
from localqwen_medical.profile import Profile

SUMMARY_KEY = "summary"
DEFAULT_BUDGET_TOKENS = 1500
KEEP_RECENT_MESSAGES = 4  # the last two exchanges always go verbatim
SUMMARY_SHARE = 0.3  # at most this part of the budget for the summary

SUMMARY_PROMPT = """Summarise the earlier part of a medical consultation for the doctor who continues it.
Keep symptoms with their duration, test results with numbers, advice already given and open questions.
Write at most {words} words, in the language of the conversation. Do not repeat or contradict the patient
profile below (it is kept separately and is always shown).
Patient profile: {profile}
Previous summary: {previous}
Conversation to add:
{turns}"""

_CJK = re.compile(r"[\u4e00-\u9fff]")
# Sentences worth keeping in an extractive summary: numbers, doses, symptoms, drugs, questions.
_SALIENT = re.compile(
    r"\d|mg|ml|°|fever|pain|cough|bleed|rash|blood|pressure|sugar|dose|allerg|pregnan|diagnos|test|scan|"
    r"take|taking|medic|symptom|since|days?|weeks?|\?|？|发热|发烧|疼|痛|咳|血|皮疹|过敏|怀孕|诊断|检查|"
    r"吃|服用|药|症状|天|周|月|吗")


def estimate_tokens(text: str) -> int:
    """A model-free token count: about one token per CJK character and 1.3 per other word."""
    cjk = len(_CJK.findall(text))
    words = len(re.findall(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_\u4e00-\u9fff]", text))
    return cjk + int(words * 1.3) + 1


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _count(messages: list[dict[str, Any]], engine: Any = None) -> int:
    if engine is not None and hasattr(engine, "count_tokens"):
        try:
            return int(engine.count_tokens(messages))
        except Exception:  # some backends cannot count without loading; fall back to the estimate
            pass
    return sum(estimate_tokens(_text(m)) + 4 for m in messages)


@dataclass
class HistoryPlan:
    messages: list[dict[str, Any]]  # what to send before the new message
    summarised: int  # how many history messages the summary stands for
    summary: str
    summary_source: str  # "model", "extractive" or "" (nothing summarised)


def extractive_summary(messages: list[dict[str, Any]], max_tokens: int, previous: str = "") -> str:
    """Keep the salient sentences of the user turns (then the assistant's), oldest first, within budget."""
    picked: list[str] = [previous] if previous else []
    used = estimate_tokens(previous) if previous else 0
    for role in ("user", "assistant"):
        for message in messages:
            if message.get("role") != role:
                continue
            for sentence in re.split(r"(?<=[。！？\n])|(?<=[.!?])\s+", _text(message)):
                sentence = sentence.strip()
                line = ("Patient: " if role == "user" else "Assistant: ") + sentence
                if not sentence or not _SALIENT.search(sentence) or line in picked:  # said again: once is enough
                    continue
                cost = estimate_tokens(sentence)
                if used + cost > max_tokens:
                    break
                picked.append(line)
                used += cost
    return "\n".join(picked)


def model_summary(messages: list[dict[str, Any]], engine: Any, profile: Profile, max_tokens: int,
                  previous: str = "") -> str:
    from localqwen.runtime.engine import GenerationSettings

    turns = "\n".join(f"{m.get('role', 'user')}: {_text(m)}" for m in messages)
    prompt = SUMMARY_PROMPT.format(words=max(20, int(max_tokens / 1.5)), profile=profile.summary(),
                                   previous=previous or "(none)", turns=turns)
    result = engine.chat([{"role": "user", "content": prompt}],
                         settings=GenerationSettings(max_new_tokens=max(32, max_tokens)))
    text = re.sub(r"<think>.*?</think>", "", result.text, flags=re.S).strip()
    if not text:
        raise ValueError("the model returned an empty summary")
    return text


def profile_block(profile: Profile) -> str:
    return "Patient profile (from this conversation; authoritative):\n" + "\n".join(f"- {line}" for line in profile.lines())


def build_history(history: list[dict[str, Any]], metadata: dict[str, Any], *, engine: Any = None,
                  budget_tokens: int = DEFAULT_BUDGET_TOKENS, keep_recent: int = KEEP_RECENT_MESSAGES) -> HistoryPlan:
    """The history to send with the next request: a system note (profile, then the summary of
    what no longer fits) and the most recent messages that fit ``budget_tokens``.

    Updates ``metadata["summary"]`` when more messages had to be summarised (the host saves it)."""
    if budget_tokens < 64:
        raise ValueError(f"budget_tokens must be at least 64, got {budget_tokens}")
    profile = Profile.from_metadata(metadata)
    state = metadata.get(SUMMARY_KEY) or {}
    covered = min(int(state.get("covers", 0)), len(history))
    summary, source = str(state.get("text", "")), str(state.get("source", ""))
    summary_budget = int(budget_tokens * SUMMARY_SHARE)
    recent_budget = budget_tokens - summary_budget - estimate_tokens(profile_block(profile))

    # The newest messages that fit; never fewer than keep_recent (the current exchange matters most).
    start = len(history)
    while start > covered:
        candidate = history[start - 1:]
        if len(candidate) > keep_recent and _count(candidate, engine) > recent_budget:
            break
        start -= 1
    if start > covered:  # these fell out of the window since the last summary
        dropped = history[covered:start]
        try:
            if engine is None:
                raise LookupError("no engine")
            summary, source = model_summary(dropped, engine, profile, summary_budget, summary), "model"
        except Cancelled:
            raise
        except Exception:  # no model, or it failed: keep the facts extractively
            summary, source = extractive_summary(dropped, summary_budget, summary), "extractive"
        covered = start
        metadata[SUMMARY_KEY] = {"text": summary, "covers": covered, "source": source}

    note = [] if profile.is_empty() else [profile_block(profile)]
    if covered and summary:
        note.append("Summary of the earlier conversation:\n" + summary)
    messages = ([{"role": "system", "content": "\n\n".join(note)}] if note else []) + history[covered:]
    return HistoryPlan(messages=messages, summarised=covered, summary=summary if covered else "",
                       summary_source=source if covered else "")
