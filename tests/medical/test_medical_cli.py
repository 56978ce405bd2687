"""The CLI names the issue fixes: ``localqwen run medical ask`` and ``evaluate --suite router --json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from localqwen_medical.router_suite import default_data_dir


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "localqwen.cli.main", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ}, cwd=cwd)


def test_ask_rules_only_with_a_patient_file_and_a_bad_one(tmp_path):
    patient = tmp_path / "patient.json"
    patient.write_text(json.dumps({"allergies": ["penicillin"], "pregnant": True}), encoding="utf-8")
    done = run("run", "medical", "ask", "--question", "孕妇拉肚子能吃什么药？", "--patient", str(patient),
               "--rules-only", "--json")
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["kind"] == "done" and last["result"]["intent"] == "medical"
    assert "腹泻" in last["result"]["queries"][0] and "孕妇" in last["result"]["queries"][0]

    patient.write_text('{"allergies": 3}', encoding="utf-8")
    bad = run("run", "medical", "ask", "--question", "x", "--patient", str(patient), "--rules-only")
    assert bad.returncode != 0 and "allergies" in (bad.stdout + bad.stderr)


@pytest.mark.skipif(not (default_data_dir() / "huatuogpt_eval").is_dir(), reason="../shared/data is not here")
def test_evaluate_router_json():
    done = run("run", "medical", "evaluate", "--suite", "router", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])["result"]
    assert result["macro_f1"] >= 0.95 and set(result["per_label"]) == {"chat", "medical", "complex"}


def test_ask_waits_its_turn_when_the_session_is_answering():
    """The ask action stores into a chat session the chat view may be answering in: one turn at a time."""
    from localqwen.app import Workbench

    bench = Workbench.create()
    chats = bench.services.chats.for_plugin("medical")
    list(bench.run("medical", "ask", {"question": "孕妇拉肚子能吃什么药？", "rules_only": True, "session": "ward"}))
    [session] = [info.id for info in chats.sessions() if info.metadata.get("name") == "ward"]
    before = chats.messages(session)
    assert chats.claim_turn(session)  # a chat turn under way in this session
    refused = list(bench.run("medical", "ask", {"question": "还有呢？", "rules_only": True, "session": "ward"}))
    assert refused[-1].status == "failed" and "still answering" in refused[-1].summary
    assert chats.messages(session) == before  # nothing stored
    chats.release_turn(session)
    done = list(bench.run("medical", "ask", {"question": "还有呢？", "rules_only": True, "session": "ward"}))
    assert done[-1].status == "ok" and not bench.conversations.answering(session)
    assert len(chats.messages(session)) == len(before) + 2
