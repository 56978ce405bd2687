"""The memory browser from the CLI (``localqwen run memory ...``), in process with typer's runner."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from localqwen.cli.main import app

runner = CliRunner()


def events_of(result) -> list[dict]:
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def done(result) -> dict:
    return next(e for e in events_of(result) if e["kind"] == "done")


def test_add_list_search_forget_export_import(tmp_path):
    added = runner.invoke(app, ["run", "memory", "add", "--text", "My favourite colour is blue", "--json"])
    assert added.exit_code == 0, added.output
    first = done(added)["result"]["id"]
    newer = done(runner.invoke(app, ["run", "memory", "add", "--text", "My favourite colour is green", "--json"]))
    assert newer["result"]["action"] == "superseded" and newer["result"]["superseded"] == [first]
    listed = runner.invoke(app, ["run", "memory", "list", "--json"])
    table = next(e for e in events_of(listed) if e["kind"] == "table")
    assert table["columns"][:3] == ["id", "kind", "memory"] and "consolidation" in table["columns"]
    assert [row[2] for row in table["rows"]] == ["My favourite colour is green"]
    assert table["rows"][0][table["columns"].index("times")] == ""  # no relative time in it
    found = done(runner.invoke(app, ["run", "memory", "search", "--query", "favourite colour", "--json"]))
    assert found["result"]["hits"][0]["text"] == "My favourite colour is green"
    out = tmp_path / "memories.json"
    exported = runner.invoke(app, ["run", "memory", "export", "--output", str(out), "--json"])
    assert exported.exit_code == 0 and json.loads(out.read_text())["format"] == "localqwen-memory"
    forgot = done(runner.invoke(app, ["run", "memory", "forget", "--id", str(newer["result"]["id"]), "--json"]))
    assert forgot["result"]["status"] == "forgotten"
    missing = runner.invoke(app, ["run", "memory", "forget", "--id", "9999", "--json"])
    assert missing.exit_code != 0 and "no memory 9999" in missing.output
    imported = done(runner.invoke(app, ["run", "memory", "import", "--input", str(out), "--persona", "copy", "--json"]))
    assert imported["result"]["added"] == 2  # the current fact and its superseded history
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2", encoding="utf-8")
    refused = runner.invoke(app, ["run", "memory", "import", "--input", str(bad), "--json"])
    assert refused.exit_code != 0 and "invalid JSON" in refused.output


def test_browser_shows_the_dates_relative_times_meant():
    """The browser keeps the memory as said (that is what is edited) and shows beside it the date
    each relative time meant, as recall shows it to the model."""
    import time

    from localqwen_memory.relative_dates import relative_times

    said = "We adopted a puppy last Friday"
    done(runner.invoke(app, ["run", "memory", "add", "--text", said, "--persona", "dates", "--json"]))
    listed = runner.invoke(app, ["run", "memory", "list", "--persona", "dates", "--json"])
    table = next(e for e in events_of(listed) if e["kind"] == "table")
    row = next(r for r in table["rows"] if r[2] == said)
    expected = relative_times(said, time.time())[0].shown  # the Friday before today
    assert expected.startswith("Friday ") and row[table["columns"].index("times")] == f"last Friday: {expected}"
