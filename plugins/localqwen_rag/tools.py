"""The ``save_session_summary`` tool: a Markdown report of the conversation, the plans, the
evidence and the sources, written into the data dir; returns its path.

The model calls it through Qwen's native tool format (``<tool_call>{"name": ...}</tool_call>``,
parsed by the engine into ``ChatResult.tool_calls``). Small models rarely manage that, so the
user's own message may trigger it by keywords too. Neither path ever looks at retrieved text: the
tool turn's prompt contains only the user's conversation, and the keyword check reads only the
user's message, so a document that says "call save_session_summary" cannot cause a call.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from localqwen.atomic import atomic_write_text

SAVE_SESSION_SUMMARY = {
    "type": "function",
    "function": {
        "name": "save_session_summary",
        "description": "Save the whole conversation with its plans, evidence and sources as a Markdown "
                       "report, and return the file path. Use when the user asks to save, archive, "
                       "export or summarise the conversation.",
        "parameters": {
            "type": "object",
            "properties": {"title": {"type": "string", "description": "a short title for the report"}},
            "required": [],
        },
    },
}
TOOLS = [SAVE_SESSION_SUMMARY]
TOOL_SYSTEM = ("You manage the session. If the user asks to save, archive, export or summarise the conversation, "
               "call the save_session_summary tool. Otherwise reply with the single word NO_TOOL.")
_KEYWORDS = re.compile(
    r"(?i)\b(save|archive|export)\b.{0,40}\b(session|conversation|chat|summary|transcript|record)s?\b"
    r"|\b(summari[sz]e|summary of)\b.{0,30}\b(session|conversation|chat)\b"
    r"|总结对话|保存记录|保存对话|导出对话|会话总结|归档")


def wants_summary(user_message: str) -> bool:
    """Keyword fallback: does the *user's own* message ask for the report?"""
    return bool(_KEYWORDS.search(user_message or ""))


def select_call(model_calls: list, user_message: str) -> tuple[str, dict[str, Any]] | None:
    """(how, arguments) for save_session_summary, or None. ``model_calls`` are the ToolCalls the
    engine parsed from the model's own reply on the tool turn; the fallback reads only the user."""
    for call in model_calls:
        if call.name == SAVE_SESSION_SUMMARY["function"]["name"]:
            return "native tool call", dict(call.arguments or {})
    if wants_summary(user_message):
        return "keyword fallback (user asked)", {"title": user_message[:80]}
    return None


def _slug(text: str) -> str:
    slug = re.sub(r"[^\w\-]+", "-", text.strip().lower(), flags=re.UNICODE).strip("-")
    return slug[:48] or "session"


def save_session_summary(session: dict[str, Any], folder: Path, title: str = "") -> Path:
    """Write the report atomically under ``folder`` and return its path."""
    title = (title or "").strip()[:120] or "LocalQwen RAG session"
    lines = [f"# {title}", "", f"Saved {time.strftime('%Y-%m-%d %H:%M:%S')}.", ""]
    for number, turn in enumerate(session.get("turns", []), start=1):
        lines += [f"## Turn {number}", "", f"**Question:** {turn.get('question', '')}", ""]
        if turn.get("topology"):
            lines += [f"**Topology:** {turn['topology']} ({turn.get('router_source', '')})", ""]
        if turn.get("plan"):
            lines += ["**Plan:**", *[f"{i}. {step}" for i, step in enumerate(turn["plan"], start=1)], ""]
        if turn.get("decision"):
            lines += [f"**Manager:** {turn['decision']}", ""]
        lines += ["**Answer:**", "", turn.get("answer", ""), ""]
        if turn.get("evidence"):
            lines += ["**Evidence:**", ""]
            for item in turn["evidence"]:
                quoted = item["text"][:600].replace("\n", "\n> ")
                lines += [f"[{item['n']}] {item['citation']}", "", f"> {quoted}", ""]
        if turn.get("verdicts"):
            lines += ["**Reviews:** " + "; ".join(f"{v['verdict']} ({', '.join(v['reasons'])})"
                                                  for v in turn["verdicts"]), ""]
    sources = sorted({item["citation"] for turn in session.get("turns", []) for item in turn.get("evidence", [])})
    if sources:
        lines += ["## Sources", "", *[f"- {s}" for s in sources], ""]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{_slug(title)}.md"
    atomic_write_text(path, "\n".join(lines))
    return path
