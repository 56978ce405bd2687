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


def test_ctrl_c_cancels_a_real_process(test_plugins, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "localqwen.cli.main", "run", "testplug", "slow", "--steps", "2000", "--delay", "0.01", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
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
