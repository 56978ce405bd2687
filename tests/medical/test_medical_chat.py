"""The medical chat through ``Workbench.conversations`` (what every chat view calls) with the real
SQLite chat store, a real knowledge base (MiniLM, LanceDB) and the auditor's rule layer: commands,
the profile feeding the audit, a blocked answer, and two concurrent ``achat`` turns."""

from __future__ import annotations

import asyncio

import pytest

from localqwen.app import Workbench
from localqwen.plugin_api import events

DOCS = {"amoxicillin.txt": "Amoxicillin is a penicillin antibiotic used for bacterial ear infections (otitis media).",
        "rehydration.txt": "Oral rehydration solution prevents dehydration in adults with acute diarrhea."}


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Workbench:
    root = tmp_path_factory.mktemp("medical_chat")
    home = root / "home"
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("LOCALQWEN_HOME", str(home))
    first = Workbench.create()
    first.paths.config_dir.mkdir(parents=True, exist_ok=True)
    first.paths.config_file.write_text(f'[plugins.rag]\nallowed_roots = ["{root}"]\n', encoding="utf-8")
    made = Workbench.create()
    done = list(made.run("rag", "add-documents", {"paths": [str(docs)], "knowledge_base": "medical"}))[-1]
    assert done.status == "ok", done
    yield made
    mp.undo()


def test_rules_only_turns_commands_and_profile(bench):
    talk = bench.conversations
    assert "medical" in [plugin.id for plugin in talk.plugins()]
    session = talk.new_session("medical", metadata={"rules_only": True})

    said = list(talk.send("medical", session, "/set knowledge_base medical"))
    assert said[-1].status == "ok"
    said = list(talk.send("medical", session, "/profile set allergies penicillin"))
    profile = next(e for e in said if isinstance(e, events.Table))
    assert ["allergies", "penicillin [turn 0]"] in profile.rows or any("penicillin" in str(r) for r in profile.rows)

    # Evidence about amoxicillin + a penicillin allergy: the rule layer blocks the drafted answer.
    said = list(talk.send("medical", session, "Can I take amoxicillin for my ear infection?"))
    done = said[-1]
    assert done.status == "ok" and done.result["verdict"] == "blocked"
    assert any(f["rule"] == "allergy_conflict" for f in done.result["findings"])
    evidence = next(e for e in said if isinstance(e, events.Table) and e.title == "Evidence")
    assert evidence.rows[0][1] == "amoxicillin.txt"
    stored = talk.entries("medical", session)[-1].message["content"]
    assert "withheld" in stored and stored.endswith("not a substitute for advice from a doctor or other clinician.")

    said = list(talk.send("medical", session, "What prevents dehydration when I have diarrhea?"))
    assert said[-1].result["verdict"] == "pass" and "[Evidence 1]" in said[-1].result["answer"]

    # The side panel every chat view shows: the profile the auditor used, with its source turn.
    panel = {table.title: table for table in talk.panel("medical", session)}
    profile_rows = dict(map(tuple, panel["Patient profile (/profile to edit)"].rows))
    assert "penicillin" in profile_rows["allergies"]
    assert ["knowledge base", "medical"] in panel["This session (/set NAME VALUE)"].rows

    log = list(talk.send("medical", session, "/audit-log 5"))
    assert log[-1].result["records"] >= 2
    bad = list(talk.send("medical", session, "/set k 99"))
    assert bad[-1].status == "failed" and "k" in bad[-1].summary


def test_two_achats_run_at_once(bench):
    from localqwen_medical.chat import achat

    talk = bench.conversations
    sessions = [talk.new_session("medical", metadata={"rules_only": True, "knowledge_base": "medical"})
                for _ in range(2)]
    questions = ["What prevents dehydration when I have diarrhea?", "孕妇拉肚子怎么办？"]

    async def both():
        async def one(session, question):
            seen = []
            async for event in achat(lambda: talk.send("medical", session, question)):
                seen.append(event)
            return seen
        return await asyncio.gather(*(one(s, q) for s, q in zip(sessions, questions, strict=True)))

    first, second = asyncio.run(both())
    assert first[-1].kind == "done" and second[-1].kind == "done"
    assert first[-1].result["intent"] == "medical" and "rehydration" in first[-1].result["answer"]
    assert second[-1].result["answer"].endswith("不能替代医生或其他临床专业人员的诊疗意见。")
    assert "腹泻" in second[-1].result["queries"][0]


def test_achat_passes_on_a_failure():
    from localqwen_medical.chat import achat

    def broken():
        yield events.Log(message="started")
        raise RuntimeError("engine fell over")

    async def drain():
        return [event async for event in achat(broken)]

    with pytest.raises(RuntimeError, match="fell over"):
        asyncio.run(drain())
