"""The CLI names the checks use: localqwen run safari play | generate | evaluate."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from localqwen.cli.main import app

runner = CliRunner()


def _events(result):
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_play_streams_turns_images_tool_calls_and_the_outcome(tmp_path):
    for policy in ("expert", "greedy", "random"):
        events = _events(runner.invoke(app, ["run", "safari", "play", "--policy", policy, "--kind", "find-one",
                                             "--seed", "7", "--output-dir", str(tmp_path / policy), "--json"]))
        done = events[-1]
        assert done["kind"] == "done" and done["status"] == "ok"
        turns = done["result"]["turns"]
        assert done["result"]["policy"] == policy and done["result"]["mission"] == "find-one-7"
        started = [e for e in events if e["kind"] == "step" and e["status"] == "started"]
        assert len(started) == turns
        images = [e["path"] for e in events if e["kind"] == "image"]
        assert len(images) == 2 * turns and all((tmp_path / policy).joinpath(p.rsplit("/", 1)[1]).is_file()
                                                for p in images)
        calls = [e for e in events if e["kind"] == "tool_call"]
        assert calls and all(e["result"] for e in calls)
    assert done["result"]["success"] in (True, False)


def test_play_a_mission_from_a_file_and_bad_files_fail_by_line(tmp_path):
    missions = tmp_path / "m.jsonl"
    missions.write_text(json.dumps({"id": "near", "kind": "find-one", "targets": ["zebra"],
                                    "map": ["Z....", "....."], "start": [1, 1]}) + "\n")
    events = _events(runner.invoke(app, ["run", "safari", "play", "--missions", str(missions), "--json"]))
    assert events[-1]["result"]["success"] is True and events[-1]["result"]["turns"] == 2  # found, then done
    missions.write_text('{"id": "a", "kind": "find-one", "targets": ["zebra"], "seed": 1}\n{"id": "b"\n')
    result = runner.invoke(app, ["run", "safari", "evaluate", "--missions", str(missions), "--json"])
    assert result.exit_code == 1
    assert "m.jsonl line 2: invalid JSON" in result.output


def test_generate_writes_the_dataset(tmp_path):
    events = _events(runner.invoke(app, ["run", "safari", "generate", "--episodes", "3",
                                         "--output-dir", str(tmp_path), "--json"]))
    assert any(e["kind"] == "progress" and e["eta_s"] is not None for e in events)
    result = events[-1]["result"]
    assert result["episodes"] == 3 and result["rows"] > 3
    assert (tmp_path / "dataset.jsonl").is_file() and (tmp_path / "conversations.jsonl").is_file()
    assert not (tmp_path / "grounding.jsonl").exists()
    assert result["teacher"] == "expert" and "Sweep " not in (tmp_path / "dataset.jsonl").read_text()
    events = _events(runner.invoke(app, ["run", "safari", "generate", "--episodes", "2", "--teacher", "sweeper",
                                         "--output-dir", str(tmp_path / "sweeper"), "--json"]))
    assert events[-1]["result"]["teacher"] == "sweeper"
    rows = [json.loads(line) for line in (tmp_path / "sweeper" / "dataset.jsonl").read_text().splitlines()]
    assert any("Sweep " in call["arguments"].get("text", "") for row in rows for call in row["tool_calls"])
    assert {row["situation"] for row in rows} & {"explore (sweep on)", "explore (sweep turn)"}


def test_generate_writes_the_question_rows_apart_when_asked(tmp_path):
    events = _events(runner.invoke(app, ["run", "safari", "generate", "--episodes", "2", "--prompt", "compact",
                                         "--grounding", "2", "--grounding-apart", "--output-dir", str(tmp_path),
                                         "--json"]))
    questions = (tmp_path / "grounding.jsonl").read_text().splitlines()
    assert questions and all('"Where is the ' in line for line in questions)
    assert '"Where is the ' not in (tmp_path / "conversations.jsonl").read_text()
    assert any(e["kind"] == "file" and e["path"].endswith("grounding.jsonl") for e in events)


def test_evaluate_json_ends_with_the_numbers_per_policy():
    events = _events(runner.invoke(app, ["run", "safari", "evaluate", "--policy", "expert", "--policy", "random",
                                         "--kind", "find-one", "--seeds", "1000-1019", "--json"]))
    assert any(e["kind"] == "progress" for e in events)
    done = events[-1]
    assert done["kind"] == "done" and done["status"] == "ok"
    runs = {run["policy"]: run for run in done["result"]["runs"]}
    assert set(runs) == {"expert", "random"}
    for run in runs.values():
        assert run["episodes"] == 20 and run["kind"] == "find-one"
        for key in ("success_rate", "valid_tool_calls", "action_agreement", "thought_consistency",
                    "false_declare_rate"):
            assert 0 <= run[key] <= 1
        assert isinstance(run["avg_turns"], (int, float)) and len(run["success_ci95"]) == 2
        # where each mission ended: every episode counted once, the wins among them
        assert sum(run["outcomes"].values()) == 20
        assert run["outcomes"]["won"] == round(run["success_rate"] * 20)
    assert runs["expert"]["success_rate"] > runs["random"]["success_rate"]
    tables = [e for e in events if e["kind"] == "table"]
    assert [t["title"] for t in tables][-1].startswith("Where the missions ended")
    assert tables[-1]["columns"][2:] == ["won", "never_seen", "passed_by", "seen_not_reached",
                                         "reached_not_declared", "found_not_finished"]


def test_evaluate_compare_runs_every_baseline_and_one_policy_puts_its_numbers_on_top():
    events = _events(runner.invoke(app, ["run", "safari", "evaluate", "--compare", "--kind", "find-two",
                                         "--seeds", "1-4", "--json"]))
    assert [run["policy"] for run in events[-1]["result"]["runs"]] == ["expert", "random", "greedy", "sweeper", "tour", "compass"]
    # agreement is measured against the teacher asked for: the sweeper agrees with itself, not the expert
    events = _events(runner.invoke(app, ["run", "safari", "evaluate", "--policy", "sweeper", "--policy", "expert",
                                         "--teacher", "sweeper", "--seeds", "1-4", "--json"]))
    agreement = {run["policy"]: run["action_agreement"] for run in events[-1]["result"]["runs"]}
    assert agreement["sweeper"] == 1.0 and agreement["expert"] < 1.0
    events = _events(runner.invoke(app, ["run", "safari", "evaluate", "--policy", "greedy", "--seeds", "1-3",
                                         "--json"]))
    assert events[-1]["result"]["success_rate"] == events[-1]["result"]["runs"][0]["success_rate"]


def test_play_with_a_model_that_makes_no_valid_call_wastes_turns_without_crashing(tmp_path, tiny_qwen3_path):
    """An untrained tiny Qwen3 writes noise: every turn is a wasted turn, the episode still ends."""
    missions = tmp_path / "m.jsonl"
    missions.write_text(json.dumps({"id": "short", "kind": "find-one", "targets": ["zebra"],
                                    "map": ["Z.....", "......"], "start": [1, 4], "max_turns": 2}) + "\n")
    events = _events(runner.invoke(app, ["run", "safari", "play", "--policy", "model", "--model", str(tiny_qwen3_path),
                                         "--max-new-tokens", "8", "--missions", str(missions),
                                         "--output-dir", str(tmp_path / "out"), "--json"]))
    done = events[-1]
    assert done["status"] == "ok", done
    assert done["result"]["turns"] == 2 and done["result"]["outcome"] == "out of turns"
    assert done["result"]["path"] == [[1, 4]]
    finished = [e for e in events if e["kind"] == "step" and e["status"] == "finished"]
    assert len(finished) == 2


def test_evaluate_a_model_with_its_ablations(tmp_path, tiny_qwen3_path):
    missions = tmp_path / "m.jsonl"
    missions.write_text("\n".join(json.dumps({"id": f"m{i}", "kind": "find-one", "targets": ["zebra"],
                                              "map": ["Z.....", "......"], "start": [1, 3 + i], "max_turns": 2})
                                  for i in range(2)) + "\n")
    events = _events(runner.invoke(app, ["run", "safari", "evaluate", "--policy", "model", "--policy", "greedy",
                                         "--model", str(tiny_qwen3_path), "--max-new-tokens", "8", "--ablations",
                                         "--missions", str(missions), "--json"]))
    runs = {run["policy"]: run for run in events[-1]["result"]["runs"]}
    assert set(runs) == {"model", "model (blank image)", "model (notepad hidden)", "greedy"}
    for run in runs.values():
        assert run["episodes"] == 2 and run["kind"] == "find-one"
        assert 0 <= run["valid_tool_calls"] <= 1 and 0 <= run["action_agreement"] <= 1
    # an untrained model writes no usable call: its turns are wasted, and greedy does better
    assert runs["model"]["success_rate"] == 0.0 and runs["model"]["avg_turns_all"] == 2
    assert runs["greedy"]["valid_tool_calls"] == 1.0


def test_the_route_stage_from_the_cli(tmp_path, tiny_qwen3_vl_path):
    """generate --route writes the route lines into compact rows (a full-profile request fails
    clearly); play --route asks a vision model the way first and plays on (random weights: its
    answers are noise, the turns run all the same)."""
    events = _events(runner.invoke(app, ["run", "safari", "generate", "--episodes", "2", "--teacher", "tour",
                                         "--prompt", "compact", "--route", "--output-dir", str(tmp_path / "rows"),
                                         "--json"]))
    assert events[-1]["status"] == "ok"
    texts = [json.loads(line)["messages"][1]["content"][0]["text"]
             for line in (tmp_path / "rows" / "conversations.jsonl").read_text().splitlines()]
    assert any("\nWay to " in text for text in texts)
    failed = runner.invoke(app, ["run", "safari", "generate", "--episodes", "1", "--route",
                                 "--output-dir", str(tmp_path / "full"), "--json"])
    assert "prompt='compact'" in failed.stdout
    missions = tmp_path / "m.jsonl"
    missions.write_text(json.dumps({"id": "short", "kind": "find-one", "targets": ["zebra"],
                                    "map": ["Z.....", "......"], "start": [1, 4], "max_turns": 2}) + "\n")
    events = _events(runner.invoke(app, ["run", "safari", "play", "--policy", "model", "--model",
                                         str(tiny_qwen3_vl_path), "--prompt", "compact", "--route",
                                         "--max-new-tokens", "8", "--missions", str(missions),
                                         "--output-dir", str(tmp_path / "out"), "--json"]))
    assert events[-1]["status"] == "ok" and events[-1]["result"]["turns"] == 2


def test_generate_writes_the_openings_into_compact_thoughts(tmp_path):
    """generate --openings: every compact Thought says how far each way is open (openings.py), as
    the view shows it; asked with the full profile it fails clearly, before writing anything."""
    from localqwen_safari.openings import said_opening

    events = _events(runner.invoke(app, ["run", "safari", "generate", "--episodes", "2", "--teacher", "tour",
                                         "--prompt", "compact", "--openings", "--output-dir", str(tmp_path / "rows"),
                                         "--json"]))
    assert events[-1]["status"] == "ok"
    replies = [json.loads(line)["messages"][2]["content"]
               for line in (tmp_path / "rows" / "conversations.jsonl").read_text().splitlines()]
    assert replies and all(said_opening(reply) is not None for reply in replies)
    failed = runner.invoke(app, ["run", "safari", "generate", "--episodes", "1", "--openings",
                                 "--output-dir", str(tmp_path / "full"), "--json"])
    assert "prompt='compact'" in failed.stdout and not (tmp_path / "full" / "conversations.jsonl").exists()
