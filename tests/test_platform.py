"""The platform pieces the plugins build on: chat store, conversations, one config owner, typed
context, and the one exactly-one-Done wrapper. Real SQLite, real plugin host, no frontends."""

from __future__ import annotations

import pytest

from localqwen.app import Workbench
from localqwen.config import ConfigError
from localqwen.plugin_api import ChatRequest, Context, Plugin, PluginHost, chat
from localqwen.plugin_api import events as ev
from localqwen.vocabulary.cancel import Cancelled, CancelToken
from localqwen.vocabulary.finish import finish_once


class Parrot(Plugin):
    """A chat-only plugin: repeats the message, counts turns in the session metadata."""

    id = "parrot"
    title = "Parrot"

    @chat
    def respond(self, request: ChatRequest, ctx: Context):
        request.metadata["turns"] = request.metadata.get("turns", 0) + 1
        yield ev.Step(step="listen", title="Listening")
        yield ev.ToolCall(name="count", arguments={"n": len(request.history)}, result=str(len(request.history)))
        if request.text == "boom":
            raise RuntimeError("the parrot fell off its perch")
        for word in f"you said {request.text}".split(" "):
            ctx.cancel.raise_if_cancelled()
            yield ev.TextDelta(text=word + " ")
        yield ev.Done(result={"words": len(request.text.split())})


def bench_with(*plugins: type[Plugin]) -> Workbench:
    host = PluginHost(use_entry_points=False)
    for plugin in plugins:
        assert host.add(plugin) is not None, host.failures
    return Workbench.create(host=host)


def test_a_chat_only_plugin_loads_and_says_it_chats():
    bench = bench_with(Parrot)
    plugin = bench.host.get("parrot")
    assert plugin.chats and plugin.actions() == []
    assert [p.id for p in bench.conversations.plugins()] == ["parrot"]


def test_conversation_turn_stores_answer_display_and_metadata():
    bench = bench_with(Parrot)
    talk = bench.conversations
    session = talk.new_session("parrot")
    events = list(talk.send("parrot", session, "hello there"))
    assert [e.kind for e in events] == ["step", "tool_call", "text", "text", "text", "text", "done"]
    assert events[-1].status == "ok" and events[-1].result == {"words": 2}
    entries = talk.entries("parrot", session)
    assert [e.message["role"] for e in entries] == ["user", "assistant"]
    answer = entries[1]
    assert answer.message["content"] == "you said hello there "
    assert answer.message["tool_calls"][0]["function"] == {"name": "count", "arguments": {"n": 0}}
    # The empty text event marks where the answer came, so a reloaded chat keeps the live order.
    assert [d["kind"] for d in answer.display] == ["step", "tool_call", "text"]
    from localqwen.chat_replay import message_events

    replayed = message_events(answer)
    assert [e.kind for e in replayed] == ["step", "tool_call", "text"]
    assert replayed[-1].text == "you said hello there "
    assert talk.store("parrot").metadata(session) == {"turns": 1}
    # The second turn sees the first one as history, and the metadata it left.
    events = list(talk.send("parrot", session, "again"))
    assert events[1].arguments == {"n": 2}
    assert talk.store("parrot").metadata(session) == {"turns": 2}


def test_a_failing_responder_ends_in_error_and_one_done_and_keeps_the_user_message():
    bench = bench_with(Parrot)
    talk = bench.conversations
    session = talk.new_session("parrot")
    events = list(talk.send("parrot", session, "boom"))
    assert [e.kind for e in events][-2:] == ["error", "done"]
    assert sum(e.kind == "done" for e in events) == 1 and events[-1].status == "failed"
    assert "perch" in events[-2].message
    roles = [e.message["role"] for e in talk.entries("parrot", session)]
    assert roles == ["user", "assistant"]  # the shown step and tool call are kept with the failed answer


def test_stop_mid_answer_keeps_what_was_said():
    bench = bench_with(Parrot)
    talk = bench.conversations
    session = talk.new_session("parrot")
    cancel = CancelToken()
    seen = []
    for event in talk.send("parrot", session, "one two three four", cancel=cancel):
        seen.append(event)
        if event.kind == "text":
            cancel.cancel("stopped")
    assert seen[-1].kind == "done" and seen[-1].status == "cancelled"
    assert talk.entries("parrot", session)[-1].message["content"] == "you "


def test_regenerate_replaces_the_last_answer():
    bench = bench_with(Parrot)
    talk = bench.conversations
    session = talk.new_session("parrot")
    list(talk.send("parrot", session, "hi"))
    list(talk.regenerate("parrot", session))
    assert [e.message["role"] for e in talk.entries("parrot", session)] == ["user", "assistant"]


def parrot_session():
    talk = bench_with(Parrot).conversations
    return talk, talk.new_session("parrot")


def read_until(stream, kind: str):
    """Read ``stream`` up to and with the first event of ``kind``; the rest is left unread."""
    for event in stream:
        if event.kind == kind:
            return stream
    raise AssertionError(f"no {kind} event")


def test_one_turn_at_a_time_per_session():
    """A second send, a regenerate or a clear of a session still answering is refused and changes
    nothing (two browser tabs, Enter pressed twice); the session is free again once the answer ends."""
    from localqwen.conversations import SessionAnswering

    bench = bench_with(Parrot)
    talk = bench.conversations
    session, other = talk.new_session("parrot"), talk.new_session("parrot")
    first = talk.send("parrot", session, "one two three")
    assert next(first).kind == "step" and talk.answering(session)
    for refused in (lambda: talk.send("parrot", session, "second question"),
                    lambda: talk.regenerate("parrot", session),
                    lambda: talk.clear("parrot", session)):
        with pytest.raises(SessionAnswering, match="still answering"):
            refused()
    assert [e.message["content"] for e in talk.entries("parrot", session)] == ["one two three"]
    list(talk.send("parrot", other, "meanwhile"))  # another session is not held up
    rest = list(first)
    assert rest[-1].kind == "done" and not talk.answering(session)
    assert [e.message["role"] for e in talk.entries("parrot", session)] == ["user", "assistant"]
    list(talk.send("parrot", session, "second question"))
    talk.clear("parrot", session)
    assert talk.entries("parrot", session) == []


def test_a_turn_under_way_in_another_process_holds_the_session_until_it_ends_or_dies():
    """The TUI and the web view of one data folder are two processes: a session answering in one
    is refused in the other, and a process killed mid-answer does not leave its session stuck."""
    import signal
    import subprocess
    import sys

    from localqwen.conversations import SessionAnswering

    bench = bench_with(Parrot)
    talk = bench.conversations
    session, other = talk.new_session("parrot"), talk.new_session("parrot")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from pathlib import Path\n"
         "from localqwen.storage.chat_store import ChatStore\n"
         "from localqwen.storage.database import Database\n"
         "store = ChatStore(Database(Path(sys.argv[1])))\n"
         "print('claimed' if store.claim_turn(int(sys.argv[2])) else 'refused', flush=True)\n"
         "time.sleep(120)\n",
         str(bench.services.database.path), str(session)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "claimed"
        assert talk.answering(session) and not talk.answering(other)
        with pytest.raises(SessionAnswering, match="still answering"):
            talk.send("parrot", session, "meanwhile, in the other window")
        assert talk.entries("parrot", session) == []
        list(talk.send("parrot", other, "another session is not held up"))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    assert not talk.answering(session)
    assert list(talk.send("parrot", session, "after the crash"))[-1].status == "ok"


def test_at_done_the_session_is_free_and_its_metadata_saved():
    """A view starts the next turn as soon as it shows "done": it must not be refused, and the next
    turn must see the metadata the last one left (saved before Done is handed on, not after)."""
    talk, session = parrot_session()
    read_until(talk.send("parrot", session, "hello"), "done")
    assert not talk.answering(session)
    assert talk.store("parrot").metadata(session) == {"turns": 1}
    list(talk.send("parrot", session, "again"))
    assert talk.store("parrot").metadata(session) == {"turns": 2}


def test_a_turn_ended_early_or_failed_frees_its_session():
    import gc

    talk, session = parrot_session()
    stream = read_until(talk.send("parrot", session, "one two three four"), "text")
    stream.close()  # a view that stops reading (a closed browser tab): what was said is kept
    assert not talk.answering(session)
    assert talk.entries("parrot", session)[-1].message["content"] == "you "
    list(talk.send("parrot", session, "boom"))  # a failing responder ends the turn too
    assert not talk.answering(session)
    unread = talk.regenerate("parrot", session)  # a view that never reads its stream
    assert talk.answering(session)
    del unread
    gc.collect()
    assert not talk.answering(session)
    with pytest.raises(ValueError):  # refused before the claim: nothing is held
        talk.send("parrot", session, "  ")
    assert not talk.answering(session)


def test_sessions_are_namespaced_per_plugin():
    bench = bench_with(Parrot)
    store = bench.services.chats
    mine = store.for_plugin("parrot").create_session("mine")
    other = store.for_plugin("medical").create_session("theirs", metadata={"patient": {"allergies": ["penicillin"]}})
    assert [s.id for s in store.for_plugin("parrot").sessions()] == [mine]
    assert store.for_plugin("medical").metadata(other) == {"patient": {"allergies": ["penicillin"]}}
    with pytest.raises(KeyError, match="for plugin 'parrot'"):
        store.for_plugin("parrot").messages(other)
    with pytest.raises(KeyError):
        list(bench.conversations.send("parrot", other, "hello"))
    assert store.messages(other) == []  # nothing was stored in the other plugin's session


def test_bad_input_is_refused_before_anything_is_stored(tmp_path):
    bench = bench_with(Parrot)
    talk = bench.conversations
    session = talk.new_session("parrot")
    with pytest.raises(ValueError):
        talk.send("parrot", session, "   ")
    (tmp_path / "notes.txt").write_text("not an image")
    with pytest.raises(ValueError):
        talk.send("parrot", session, "look", images=[tmp_path / "notes.txt"])
    assert talk.entries("parrot", session) == []


def test_old_chat_history_rows_become_the_plain_chat_plugins(tmp_path):
    """A database from before chat was a plugin capability keeps its sessions, under "chat"."""
    from localqwen.storage.chat_store import MIGRATIONS, ChatStore
    from localqwen.storage.database import Database

    old = Database(tmp_path / "old.sqlite3")
    old.migrate("chat_history", MIGRATIONS[:2])
    old.connection.execute("INSERT INTO chat_sessions(title, model, created_at, updated_at) VALUES ('t', '', 1, 1)")
    old.connection.execute("INSERT INTO chat_messages(session_id, position, message, created_at) "
                           "VALUES (1, 0, '{\"role\": \"user\", \"content\": \"hi\"}', 1)")
    store = ChatStore(old)
    (session,) = store.sessions("chat")
    assert session.title == "t" and session.metadata == {}
    assert store.entries(session.id)[0].display == []


def test_set_config_updates_the_file_and_every_holder():
    bench = Workbench.create()
    device = bench.services.device
    models = bench.services.models
    bench.set_config("runtime", "remote_url", "http://127.0.0.1:9/v1")
    assert device.remote_url == "http://127.0.0.1:9/v1"
    assert models.config.runtime.remote_url == "http://127.0.0.1:9/v1"
    assert bench.config.runtime.remote_url == bench.context("x").config.runtime.remote_url
    assert 'remote_url = "http://127.0.0.1:9/v1"' in bench.paths.config_file.read_text()
    with pytest.raises(ConfigError):
        bench.set_config("runtime", "device", "tpu")
    assert device.prefer == "auto" and bench.config.runtime.device == "auto"


def test_context_is_typed_and_forwards_nothing_else():
    ctx = Workbench.create().context("someplugin")
    assert ctx.settings == {} and ctx.data_dir.is_dir()
    with pytest.raises(AttributeError):
        ctx.anything_at_all  # noqa: B018 - the old Context forwarded any name to the services


def test_finish_once_ends_every_stream_with_exactly_one_done():
    def raises():
        yield ev.Log(message="a")
        raise ValueError("bad")

    def done_then_more():
        yield ev.Done(result={"x": 1})
        yield ev.Log(message="late")

    def cancelled():
        yield ev.Log(message="a")
        raise Cancelled("user stop")

    out = list(finish_once(raises()))
    assert [e.kind for e in out] == ["log", "error", "done"] and out[-1].status == "failed"
    out = list(finish_once(done_then_more()))
    assert [e.kind for e in out] == ["log", "done"] and out[-1].result == {"x": 1}
    out = list(finish_once(cancelled()))
    assert out[-1].status == "cancelled" and out[-1].summary == "user stop"
    token = CancelToken()
    token.cancel("bye")
    out = list(finish_once(iter([ev.Log(message="a"), ev.Log(message="b")]), token))
    assert [e.kind for e in out] == ["log", "done"] and out[-1].status == "cancelled"


def test_run_plugin_help_lists_actions_and_exits_0():
    from typer.testing import CliRunner

    from localqwen.cli.main import app

    result = CliRunner().invoke(app, ["run", "captioner", "--help"])
    assert result.exit_code == 0, result.output
    assert "caption-folder" in result.output or "Actions:" in result.output
    unknown = CliRunner().invoke(app, ["run", "captioner", "--no-such-flag"])
    assert unknown.exit_code == 2
