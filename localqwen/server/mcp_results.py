"""An action's event stream as an MCP tool result and progress notifications.

- ``TextDelta`` text is the result's first text block (joined as streamed).
- ``Table`` becomes a Markdown table; ``Log`` and ``Warning`` lines a notes block; ``Error`` an
  error block, and the result is marked ``isError`` (MCP wants tool failures inside the result,
  so the calling model can read them and correct itself).
- ``FileWritten`` and ``Image`` become ``resource_link`` blocks (``file://`` URIs a client reads
  with ``resources/read``); a small image is also sent inline.
- ``Done`` gives the status and summary; ``structuredContent`` carries its ``result`` dict, the
  files, and every event the views would show (steps, tool calls, tables, metrics...).
- ``Progress`` becomes ``notifications/progress``. MCP wants one value per call that only grows,
  while an action may run several bars (a download, then the captioning). Each bar starts where
  the value stands when it first reports: the value is that start plus the bar's ``done``, the
  total its start plus the bar's ``total``, and the message names the bar once there are two. An
  update that would not move the value forward (an earlier bar reporting again) is not sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.server.mcp_files import OutputFiles, file_uri, mime_type
from localqwen.vocabulary import events as ev

if TYPE_CHECKING:
    import mcp_types

INLINE_IMAGE_BYTES = 1 * 2**20
TABLE_ROWS = 50  # rows shown in a table's text; the structured content has them all


class ToolOutcome:
    """Collects one tool call's events (everything but progress) and builds the result."""

    def __init__(self, files: OutputFiles) -> None:
        self.files = files
        self.text: list[str] = []
        self.blocks: list[Any] = []  # tables, notes, errors, links, in the order they came
        self.events: list[dict[str, Any]] = []
        self.written: list[str] = []
        self.failed = False
        self.done: ev.Done | None = None

    def add(self, event: Any) -> None:
        import mcp_types as types

        if isinstance(event, ev.TextDelta):
            self.text.append(event.text)
            return
        if isinstance(event, ev.Done):
            self.done = event
            return
        self.events.append(event.model_dump(mode="json"))
        if isinstance(event, ev.Table):
            self.blocks.append(types.TextContent(text=markdown_table(event)))
        elif isinstance(event, (ev.Log, ev.Warning)):
            prefix = "warning: " if isinstance(event, ev.Warning) else ""
            self.blocks.append(types.TextContent(text=prefix + event.message))
        elif isinstance(event, ev.Error):
            self.failed = True
            where = f" (argument '{event.field}')" if event.field else ""
            self.blocks.append(types.TextContent(text=f"error{where}: {event.message}"))
        elif isinstance(event, (ev.FileWritten, ev.Image)):
            described = event.description if isinstance(event, ev.FileWritten) else event.caption
            self.blocks.extend(self._file_blocks(Path(event.path), described, image=isinstance(event, ev.Image)))

    def _file_blocks(self, path: Path, description: str, *, image: bool) -> list[Any]:
        import base64

        import mcp_types as types

        resolved = self.files.add(path, description)
        self.written.append(str(resolved))
        if not resolved.is_file():
            return [types.TextContent(text=f"(file {resolved} was announced but does not exist)")]
        kind = mime_type(resolved)
        blocks: list[Any] = [types.ResourceLink(uri=file_uri(resolved), name=resolved.name, mime_type=kind,
                                                description=description or None, size=resolved.stat().st_size)]
        if image and kind.startswith("image/") and resolved.stat().st_size <= INLINE_IMAGE_BYTES:
            blocks.append(types.ImageContent(data=base64.b64encode(resolved.read_bytes()).decode("ascii"),
                                             mime_type=kind))
        return blocks

    def result(self) -> mcp_types.CallToolResult:
        import mcp_types as types

        done = self.done or ev.Done(status="failed", summary="the action ended without finishing")
        content: list[Any] = []
        text = "".join(self.text).strip()
        if text:
            content.append(types.TextContent(text=text))
        content.extend(self.blocks)
        if done.summary or not content:
            content.append(types.TextContent(text=f"{done.status}: {done.summary}" if done.summary else done.status))
        structured = {"status": done.status, "summary": done.summary, "result": done.result,
                      "files": self.written, "events": self.events}
        return types.CallToolResult(content=content, structured_content=structured,
                                    is_error=self.failed or done.status != "ok")


def markdown_table(table: ev.Table) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = [f"**{table.title}**"] if table.title else []
    lines.append("| " + " | ".join(cell(c) for c in table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    lines.extend("| " + " | ".join(cell(v) for v in row) + " |" for row in table.rows[:TABLE_ROWS])
    if len(table.rows) > TABLE_ROWS:
        lines.append(f"({len(table.rows) - TABLE_ROWS} more rows in structuredContent)")
    return "\n".join(lines)


class ProgressForwarder:
    """Turns ``Progress`` events into growing ``notifications/progress`` values (see the module doc)."""

    def __init__(self) -> None:
        self.starts: dict[str, float] = {}  # where each bar's count begins on the one growing value
        self.last = float("-inf")

    def forward(self, event: ev.Progress) -> tuple[float, float | None, str | None] | None:
        """``(progress, total, message)`` to send, or None when this event must not be sent."""
        start = self.starts.setdefault(event.task, max(self.last, 0.0))
        value = start + event.done
        if value <= self.last:
            return None
        self.last = value
        total = start + event.total if event.total is not None else None
        message = event.message or None
        if len(self.starts) > 1:
            message = f"{event.task}: {message}" if message else event.task
        return value, total, message
