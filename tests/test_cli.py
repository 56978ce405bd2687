import json
import os
import signal
import subprocess
import sys
import time

from typer.testing import CliRunner

from localqwen.cli.main import app

runner = CliRunner()


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("plugins", "run", "config"):
        assert command in result.output


def test_plugins_shows_loaded_and_broken(test_plugins):
    result = runner.invoke(app, ["plugins", "--json"])
    assert result.exit_code == 0
    rows = {row["id"]: row for row in json.loads(result.output)}
    assert rows["testplug"]["status"] == "loaded" and rows["testplug"]["actions"] == ["echo", "slow", "fail"]
    assert rows["broken_import"]["status"] == "failed" and "lq_module_that_does_not_exist" in rows["broken_import"]["error"]


def test_run_generates_options_from_the_form(test_plugins):
    result = runner.invoke(app, ["run", "testplug", "echo", "--help"])
    assert result.exit_code == 0
    for flag in ("--text", "--repeat", "--shout / --no-shout", "--style", "--note-file"):
        assert flag in result.output
    assert "[plain|stars]" in result.output


def test_run_json_streams_events(test_plugins):
    result = runner.invoke(app, ["run", "testplug", "echo", "--text", "hey", "--repeat", "2", "--shout", "--json"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["text"] for e in events if e["kind"] == "text"] == ["HEY\n", "HEY\n"]
    assert events[-1]["kind"] == "done" and events[-1]["status"] == "ok"


def test_run_plain_output(test_plugins):
    result = runner.invoke(app, ["run", "testplug", "echo", "--text", "plain text"])
    assert result.exit_code == 0
    assert result.stdout.count("plain text") >= 2


def test_run_bad_values_exit_2_with_field_names(test_plugins):
    result = runner.invoke(app, ["run", "testplug", "echo", "--repeat", "9"])
    assert result.exit_code == 2
    assert "--repeat" in result.output
    result = runner.invoke(app, ["run", "testplug", "echo", "--repeat", "2"])
    assert result.exit_code == 2 and "--text" in result.output and "required" in result.output.lower()


def test_run_failure_and_unknown_names(test_plugins):
    assert runner.invoke(app, ["run", "testplug", "fail"]).exit_code == 1
    result = runner.invoke(app, ["run", "nope", "x"])
    assert result.exit_code == 2 and "testplug" in result.output
    result = runner.invoke(app, ["run", "broken_register", "x"])
    assert result.exit_code == 2 and "frobnicator" in result.output
    result = runner.invoke(app, ["run", "testplug"])
    assert result.exit_code == 0 and "slow" in result.output


def default_sigint() -> None:
    """In the child: Ctrl-C as a terminal delivers it. A suite started in the background by a
    non-interactive shell (`make test &`) inherits SIGINT ignored, and Python keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_cancels_a_real_process(test_plugins, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "localqwen.cli.main", "run", "testplug", "slow", "--steps", "2000", "--delay", "0.01", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(), preexec_fn=default_sigint,
    )
    assert proc.stdout is not None
    for _ in range(3):
        proc.stdout.readline()
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert json.loads(out.strip().splitlines()[-1])["status"] == "cancelled"


def test_config_commands(isolated_home):
    result = runner.invoke(app, ["config", "path"])
    assert result.exit_code == 0 and str(isolated_home) in result.output
    assert runner.invoke(app, ["config", "show"]).exit_code == 0
    config_file = isolated_home / "config" / "config.toml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text("[app\n")
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 1 and "config.toml:1" in result.output


def test_config_edit_creates_a_documented_file(isolated_home, monkeypatch):
    monkeypatch.setenv("EDITOR", "true")
    monkeypatch.setenv("VISUAL", "true")
    result = runner.invoke(app, ["config", "edit"])
    assert result.exit_code == 0, result.output
    text = (isolated_home / "config" / "config.toml").read_text()
    assert "[runtime]" in text and "# Never touch the network" in text


# -- localqwen plugins / localqwen chat ----------------------------------------------------------
def test_plugins_says_which_plugins_chat(test_plugins):
    rows = {row["id"]: row for row in json.loads(runner.invoke(app, ["plugins", "--json"]).output)}
    assert rows["parrot"]["chat"] is True and rows["parrot"]["actions"] == []
    assert rows["chat"]["chat"] is True and rows["testplug"]["chat"] is False
    result = runner.invoke(app, ["plugins"], env={"COLUMNS": "200"})
    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") > 3}
    assert "✓" in lines["parrot"] and "✓" not in lines["testplug"]


def test_chat_repl_renders_a_plugin_chat_and_its_commands(test_plugins):
    """The ~40-line test chat plugin in the terminal: no CLI code of its own."""
    lines = "hello there\n/sessions\n/regenerate\n/image /no/such.png\n/plugin testplug\n/frobnicate\n/panel\n/exit\n"
    result = runner.invoke(app, ["chat", "--plugin", "parrot"], input=lines)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Parrot · session 1" in out
    assert "▶ Listening\n  │ Turn 1: 2 words heard.\n✓ Listening (0.01s)" in out
    assert "tool lookup({'query': 'hello there'}) -> 0 earlier messages" in out
    assert "Polly says: hello there" in out and "Turn 2: 2 words heard." in out  # regenerated
    assert "*    1  hello there  (2 messages)" in out
    assert "no image at /no/such.png" in out and "offers no chat" in out
    assert "Polly says: /frobnicate" in out  # a command the REPL does not know is the plugin's to answer
    assert "This chat" in out and "turns" in out and "3" in out.split("This chat")[-1]  # /panel: the side panel
    # A new run goes on with the latest session and shows its history first; --new starts another.
    result = runner.invoke(app, ["chat", "--plugin", "parrot"], input="")
    assert result.exit_code == 0 and "Polly says: hello there" in result.output
    result = runner.invoke(app, ["chat", "--plugin", "parrot", "--new", "--json"], input="count 3\n")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0] == {"kind": "session", "plugin": "parrot", "session": 2}
    assert "".join(e["text"] for e in events if e["kind"] == "text" and e["step"] is None) == "1 2 3"
    assert events[-1]["kind"] == "done" and events[-1]["status"] == "ok" and events[-1]["summary"] == "turn 1"
    assert runner.invoke(app, ["chat", "--plugin", "testplug"]).exit_code == 2
    result = runner.invoke(app, ["chat", "--plugin", "parrot", "--session", "99"])
    assert result.exit_code == 2 and "no chat session 99" in result.output


def test_chat_repl_ctrl_c_stops_the_answer_then_leaves(test_plugins):
    """A real process on stdin: Ctrl-C stops the answer (kept in part), a second Ctrl-C leaves."""
    proc = subprocess.Popen([sys.executable, "-m", "localqwen.cli.main", "chat", "--plugin", "parrot", "--json"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ.copy(), preexec_fn=default_sigint)
    assert proc.stdin is not None and proc.stdout is not None

    def next_event() -> dict:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        return json.loads(line)

    try:
        session = next_event()["session"]
        proc.stdin.write("count 1000\n")
        proc.stdin.flush()
        while next_event().get("text") != " 3":
            pass
        proc.send_signal(signal.SIGINT)
        event = next_event()
        while event["kind"] != "done":
            event = next_event()
        assert event["status"] == "cancelled"
        proc.stdin.write("count 2\n")  # still chatting after the stop
        proc.stdin.flush()
        event = next_event()
        while event["kind"] != "done":
            event = next_event()
        assert event["status"] == "ok"
        proc.send_signal(signal.SIGINT)  # at the prompt: leave
        proc.wait(timeout=30)
        assert proc.returncode == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    result = runner.invoke(app, ["chat", "--plugin", "parrot", "--session", str(session), "--json"], input="")
    stored = [json.loads(line) for line in result.stdout.splitlines() if '"message"' in line]
    partial = next(e["text"] for e in stored[1]["events"] if e["kind"] == "text" and e["step"] is None)
    assert partial.startswith("1 2 3") and len(partial.split()) < 1000


def test_chat_repl_with_the_tiny_qwen3(tiny_qwen3_path, isolated_home):
    """The plain model chat plugin, on a real (tiny) model, in the terminal."""
    config = isolated_home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[plugins.chat]\nmodel = "{tiny_qwen3_path}"\nmax_new_tokens = 8\n', encoding="utf-8")
    result = runner.invoke(app, ["chat", "--json"], input="Hello there\n")
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]  # (stderr: the weights' loading bar)
    assert events[0]["plugin"] == "chat"
    done = events[-1]
    assert done["kind"] == "done" and done["status"] == "ok", events
    assert 0 < done["result"]["completion_tokens"] <= 8
    assert any(e["kind"] == "text" for e in events)
