"""``localqwen chat [--plugin ID]``: talk to any plugin's chat in the terminal.

A line you type is a message; a line starting with ``/`` is a command (``/help`` lists them).
The answer is generated in a background thread while this one prints its events (streamed text,
step panels, tool calls, images, tables, errors), so Ctrl-C stops the answer at once; what was
said is kept. A second Ctrl-C, ``/exit`` or Ctrl-D leaves. ``--json`` prints every event as one
JSON line (and each session switch as ``{"kind": "session", ...}``), so a script can drive a chat
through stdin and stdout. Only Typer is imported until the command runs.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from localqwen.app import Workbench
    from localqwen.cli.event_printer import EventPrinter

COMMANDS = """commands:
  /new             start a new session
  /sessions        list this plugin's sessions
  /session N       switch to session N (its history is shown)
  /history         show this session again
  /regenerate      answer the last message again
  /image PATH      attach an image to the next message
  /plugin [ID]     talk to another plugin (without ID: the plugins that chat)
  /panel           show the plugin's side panel for this session (a profile, memories...)
  /help            this list
  /exit            leave (also Ctrl-D, or Ctrl-C twice)
any other /command goes to the plugin (e.g. the RAG chat's /settings and /set NAME VALUE)"""
FOLLOW_TIMEOUT_S = 0.1


def register(app: typer.Typer) -> None:
    app.command("chat")(chat)


def chat(
    plugin: str = typer.Option("chat", "--plugin", "-p", help="Plugin to talk to (see `localqwen plugins`)."),
    session: int | None = typer.Option(None, "--session", help="Go on with this session (default: the latest)."),
    new: bool = typer.Option(False, "--new", help="Start a new session."),
    as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines (for scripts)."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Longest answer in tokens (default: the plugin's)."),
    temperature: float | None = typer.Option(None, "--temperature", help="Sampling temperature, 0 to 2 (default: the plugin's; 0 = exact)."),
) -> None:
    """Chat with a plugin in the terminal; /help lists the commands."""
    from localqwen.cli.common import workbench
    from localqwen.plugin_api.chat import generation_options

    try:
        generation = generation_options({"max_new_tokens": max_tokens, "temperature": temperature})
    except ValueError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None
    repl = ChatRepl(workbench(), as_json=as_json)
    repl.generation = generation
    problem = repl.open(plugin, session, new=new)
    if problem:
        typer.secho(f"error: {problem}", fg="red", err=True)
        raise typer.Exit(2)
    raise typer.Exit(repl.loop())


class ChatRepl:
    def __init__(self, bench: Workbench, *, as_json: bool) -> None:
        from localqwen.cli.event_printer import EventPrinter

        self.bench = bench
        self.conversations = bench.conversations
        self.as_json = as_json
        self.printer: EventPrinter = EventPrinter(as_json=as_json)
        self.plugin_id = ""
        self.title = ""
        self.session_id = 0
        self.images: list[str] = []
        self.generation: dict[str, Any] = {}  # --max-tokens / --temperature, for every answer

    # -- where we are ---------------------------------------------------------------------------
    def open(self, plugin_id: str, session_id: int | None = None, *, new: bool = False) -> str:
        """Switch to ``plugin_id``'s chat (a session of it, a new one, or its latest); "" or why not."""
        from localqwen.plugin_api import PluginLoadError

        try:
            plugin = self.conversations.plugin(plugin_id)
            if session_id is not None:
                self.conversations.store(plugin_id).session(session_id)
            elif new:
                session_id = self.conversations.new_session(plugin_id)
            else:
                session_id = self.conversations.latest_or_new_session(plugin_id)
        except (KeyError, ValueError, PluginLoadError) as exc:
            return _message(exc)
        self.plugin_id, self.title, self.session_id = plugin_id, plugin.title, int(session_id)
        self.images = []
        if self.as_json:
            self._json({"kind": "session", "plugin": plugin_id, "session": self.session_id})
        else:
            self._note(f"{plugin.title} · session {self.session_id}  (/help for commands)")
        self.history()
        return ""

    def history(self) -> None:
        from localqwen.chat_replay import message_events

        for entry in self.conversations.entries(self.plugin_id, self.session_id):
            events = message_events(entry)
            if not events:
                continue
            role = entry.message["role"]
            if self.as_json:
                self._json({"kind": "message", "role": role, "events": [e.model_dump() for e in events]})
                continue
            self._speaker("you" if role == "user" else self.title if role == "assistant" else role)
            for event in events:
                self.printer(event)
            self.printer.close()

    # -- the loop -------------------------------------------------------------------------------
    def loop(self) -> int:
        """Read and answer lines until /exit, Ctrl-D or a second Ctrl-C; the exit code."""
        interactive = sys.stdin.isatty() and not self.as_json
        if interactive:
            with contextlib.suppress(ImportError):  # line editing and history for input(), where there is one
                import readline  # noqa: F401
        while True:
            try:
                line = input("you> " if interactive else "").strip()
                if not line:
                    continue
                outcome = self.command(line) if line.startswith("/") else self.say(line)
            except EOFError:
                return 0
            except KeyboardInterrupt:  # Ctrl-C at the prompt (or once an answer has ended): leave
                return 130
            if outcome == "exit":
                return 0
            if outcome == "interrupted":
                return 130

    def say(self, text: str) -> str:
        """Send one message (with the attached images) and print the answer."""
        started = self._start(lambda cancel: self.conversations.send(self.plugin_id, self.session_id, text,
                                                                     self.images, cancel=cancel,
                                                                     generation=self.generation))
        if started is None:
            return ""
        self.images = []
        return self.follow(started)

    def command(self, line: str) -> str:
        name, _, arg = line[1:].partition(" ")
        arg = arg.strip()
        if name in ("exit", "quit"):
            return "exit"
        if name == "help":
            self._note(COMMANDS)
        elif name == "new":
            self.open(self.plugin_id, new=True)
        elif name == "sessions":
            for info in self.conversations.sessions(self.plugin_id):
                mark = "*" if info.id == self.session_id else " "
                self._note(f"{mark} {info.id:>4}  {info.title or 'New chat'}  ({info.message_count} messages)")
        elif name == "session" and arg.isdigit():
            self._problem(self.open(self.plugin_id, int(arg)))
        elif name == "history":
            self.history()
        elif name == "regenerate":
            stream = self._start(lambda cancel: self.conversations.regenerate(self.plugin_id, self.session_id,
                                                                              cancel=cancel,
                                                                              generation=self.generation))
            if stream is not None:
                return self.follow(stream)
        elif name == "image" and arg:
            path = Path(arg).expanduser()
            if path.is_file():
                self.images.append(str(path))
                self._note(f"attached {path.name} to the next message")
            else:
                self._problem(f"no image at {path}")
        elif name == "plugin" and arg:
            self._problem(self.open(arg))
        elif name in ("plugin", "plugins"):
            for plugin in self.conversations.plugins():
                mark = "*" if plugin.id == self.plugin_id else " "
                self._note(f"{mark} {plugin.id:<12} {plugin.title}  {plugin.description}")
        elif name == "panel":
            self.panel()
        else:  # the plugin's own command: it answers (or says it does not know it) like any message
            return self.say(line)
        return ""

    def panel(self) -> None:
        """Print the plugin's side panel for this session (the tables the TUI and web show beside the chat)."""
        tables = self.conversations.panel(self.plugin_id, self.session_id)
        if not tables:
            self._note("this chat has no side panel")
        for table in tables:
            self.printer(table)
        self.printer.close()

    # -- one answer -----------------------------------------------------------------------------
    def _start(self, begin: Any) -> tuple[Any, Any] | None:
        """Start an answer in the background, or say why it can't start (nothing is stored then)."""
        from localqwen.jobs import run_in_background
        from localqwen.plugin_api import CancelToken

        cancel = CancelToken()
        try:
            events = begin(cancel)
        except (KeyError, ValueError) as exc:
            self._problem(_message(exc))
            return None
        return run_in_background(events), cancel

    def follow(self, started: tuple[Any, Any]) -> str:
        """Print the answer's events as they come. Ctrl-C stops it; a second one leaves ("interrupted")."""
        from localqwen.plugin_api import events as ev

        job, cancel = started
        if not self.as_json:
            self._speaker(self.title)
        cursor, finished = 0, False
        while not finished:
            try:
                batch, cursor, finished = job.wait_events(cursor, FOLLOW_TIMEOUT_S)
                for event in batch:
                    if isinstance(event, ev.Done) and event.status == "ok" and not self.as_json:
                        self.printer.close()  # a finished answer needs no "ok" line
                        continue
                    self.printer(event)
            except KeyboardInterrupt:
                # A second Ctrl-C, or one after the answer ended, leaves (the answer keeps what it said).
                if cancel.cancelled or job.finished:
                    self.printer.close()
                    return "interrupted"
                cancel.cancel("stopped (Ctrl-C)")
        self.printer.close()
        return ""

    # -- output ---------------------------------------------------------------------------------
    def _speaker(self, name: str) -> None:
        from rich.text import Text

        self.printer.out.print(Text(name, style="bold"))

    def _note(self, text: str) -> None:
        from localqwen.plugin_api import events as ev

        if self.as_json:
            self._json(ev.Log(message=text).model_dump())
        else:
            self.printer.err.print(text, markup=False, highlight=False, soft_wrap=True)

    def _problem(self, text: str) -> None:
        from localqwen.plugin_api import events as ev

        if text:
            self.printer(ev.Error(message=text))

    @staticmethod
    def _json(value: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def _message(exc: Exception) -> str:
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
