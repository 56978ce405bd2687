"""The ``save_session_summary`` tool: a Markdown report of the conversation, the plans, the
evidence and the sources, written into the data dir; returns its path.

The model calls it through Qwen's native tool format (``<tool_call>{"name": ...}</tool_call>``)
on the shared tool loop (``localqwen.runtime.tool_loop``). Small models rarely manage that, so the
user's own message may trigger it by keywords too, through the same :class:`Tool`. Neither path
ever looks at retrieved text: the tool turn's prompt contains only the user's conversation, and the
keyword check reads only the user's message, so a document that says "call save_session_summary"
cannot cause a call.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from localqwen.atomic import atomic_write_text
from localqwen.runtime.tool_loop import Tool

TOOL_NAME = "save_session_summary"
TOOL_DESCRIPTION = ("Save the whole conversation with its plans, evidence and sources as a Markdown report, and "
                    "return the file path. Use when the user asks to save, archive, export or summarise the "
                    "conversation.")
TOOL_PARAMETERS = {
    "type": "object",
    "properties": {"title": {"type": "string", "description": "a short title for the report"}},
    "required": [],
}
TOOL_SYSTEM = ("You manage the session. If the user asks to save, archive, export or summarise the conversation, "
               "call the save_session_summary tool. Otherwise reply with the single word NO_TOOL.")
_KEYWORDS = re.compile(
    r"(?i)\b(save|archive|export)\b.{0,40}\b(session|conversation|chat|summary|transcript|record)s?\b"
    r"|\b(summari[sz]e|summary of)\b.{0,30}\b(session|conversation|chat)\b"
    r"|总结对话|保存记录|保存对话|导出对话|会话总结|归档")


# Any hint that the message is about the session rather than the documents. Only such messages get
# the tool turn: asking the model "do you need a tool?" cost 5-24 s per question with a 1.5B
# model on a CPU, to learn that it did not.
_MIGHT_NEED_TOOL = re.compile(
    r"(?i)\b(save|saving|archive|export|download|copy|summar\w*|transcript|conversation|session|chat\s+log|"
    r"(we|you and i)\s+(discussed|talked|said)|so\s+far)\b"
    r"|保存|导出|总结|归档|记录|会话")


def could_need_tool(user_message: str) -> bool:
    """Might the user's own message want the session tool? (cheap check; the model decides after)"""
    return bool(_MIGHT_NEED_TOOL.search(user_message or ""))


def wants_summary(user_message: str) -> bool:
    """Keyword fallback: does the *user's own* message ask for the report?"""
    return bool(_KEYWORDS.search(user_message or ""))


def session_summary_tool(turns: list[dict[str, Any]], folder: Path) -> Tool:
    """The tool for one conversation: its earlier ``turns``, reports written under ``folder``."""

    def save(title: str = "") -> str:
        return str(save_session_summary(turns, folder, title))

    return Tool(TOOL_NAME, TOOL_DESCRIPTION, TOOL_PARAMETERS, save)


def _slug(text: str) -> str:
    slug = re.sub(r"[^\w\-]+", "-", text.strip().lower(), flags=re.UNICODE).strip("-")
    return slug[:48] or "session"


def save_session_summary(turns: list[dict[str, Any]], folder: Path, title: str = "") -> Path:
    """Write the report of ``turns`` (the pipeline's turn records) atomically under ``folder``; return its path."""
    title = (title or "").strip()[:120] or "LocalQwen RAG session"
    lines = [f"# {title}", "", f"Saved {time.strftime('%Y-%m-%d %H:%M:%S')}.", ""]
    for number, turn in enumerate(turns, start=1):
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
    sources = sorted({item["citation"] for turn in turns for item in turn.get("evidence", [])})
    if sources:
        lines += ["## Sources", "", *[f"- {s}" for s in sources], ""]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{_slug(title)}.md"
    atomic_write_text(path, "\n".join(lines))
    return path
