"""A plugin's chat side panel (``@chat_panel`` tables: a patient profile, recalled memories) as
Markdown for the web chat tab. Cells are plugin data, never markup, so they are escaped."""

from __future__ import annotations

import re
from collections.abc import Sequence

from localqwen.vocabulary import events as ev

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def panel_markdown(tables: Sequence[ev.Table]) -> str:
    """All tables, one after the other, each with its title; "" when there are none."""
    return "\n\n".join(_table(table) for table in tables)


def _table(table: ev.Table) -> str:
    lines = [f"**{escape(table.title)}**", ""] if table.title else []
    if not table.columns:
        return "\n".join(lines)
    lines.append("| " + " | ".join(escape(column) for column in table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    for row in table.rows:
        cells = ["" if cell is None else str(cell) for cell in row]
        cells += [""] * (len(table.columns) - len(cells))
        lines.append("| " + " | ".join(escape(cell) for cell in cells[: len(table.columns)]) + " |")
    return "\n".join(lines)


def escape(text: str) -> str:
    """Plain text that Markdown shows as typed (one line: a table cell cannot hold a line break)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
