"""A whole medical turn on a real engine (the tiny random Qwen3: its replies are noise, so the
router, rewrite, drafting and critic take their checked fallbacks) and the pipeline's verdict paths
without a model."""

from __future__ import annotations

import numpy as np
import pytest
from localqwen_medical.case import Patient
from localqwen_medical.pipeline import TurnInputs, run_turn

from localqwen.plugin_api import events
from localqwen.retrieval.search import SearchIndex

PASSAGES = ["Amoxicillin is a penicillin antibiotic for bacterial ear infections.",
            "Chest pain with sweating can be a heart attack and needs emergency care."]


class Bm25KB:
    def __init__(self):
        self.index = SearchIndex(PASSAGES, np.zeros((2, 2), np.float32), sources=["amox.md", "chest.md"])

    def search(self, query, k=10):
        return self.index.search(query, None, k=k, mode="bm25")


def steps(said):
    return [e.step for e in said if isinstance(e, events.Step) and e.status == "finished"]


def test_rules_only_turn_passes_blocks_and_always_ends_with_the_disclaimer():
    said = list(run_turn(TurnInputs("Can I take amoxicillin for an ear infection?", kb=Bm25KB(), kb_name="t")))
    assert steps(said) == ["route", "rewrite", "retrieve", "draft", "audit-0"] and said[-1].result["verdict"] == "pass"
    blocked = list(run_turn(TurnInputs("Can I take amoxicillin for an ear infection?", kb=Bm25KB(),
                                       patient=Patient(allergies=["penicillin"]))))
    assert blocked[-1].result["verdict"] == "blocked" and "refine-1" in steps(blocked)
    for done in (said[-1], blocked[-1]):
        assert done.result["answer"].endswith("not a substitute for advice from a doctor or other clinician.")
    complex_turn = list(run_turn(TurnInputs("What is amoxicillin for? What does chest pain with sweating mean?",
                                            kb=Bm25KB())))
    assert complex_turn[-1].result["intent"] == "complex" and {"rewrite-1", "rewrite-2"} <= set(steps(complex_turn))
    assert {p["source"] for p in complex_turn[-1].result["evidence"]} == {"amox.md", "chest.md"}


@pytest.mark.slow
def test_a_turn_runs_through_a_real_engine(tmp_path, tiny_qwen3_path):
    from localqwen.app import Workbench

    first = Workbench.create()
    first.paths.config_dir.mkdir(parents=True, exist_ok=True)
    first.paths.config_file.write_text(f'[plugins.medical]\nmodel = "{tiny_qwen3_path}"\n', encoding="utf-8")
    bench = Workbench.create()
    talk = bench.conversations
    session = talk.new_session("medical", metadata={"max_new_tokens": 16, "use_kb": False})
    said = list(talk.send("medical", session, "I have a tummy ache and a fever, what should I take?"))
    done = said[-1]
    assert done.status == "ok", done
    assert done.result["intent"] in ("medical", "complex") and done.result["verdict"] in ("pass", "revised", "blocked")
    audits = done.result["audits"]
    assert audits and len(audits) <= 3
    assert done.result["answer"].endswith("not a substitute for advice from a doctor or other clinician.")


def test_chit_chat_gets_the_disclaimer_only_when_it_talks_medicine():
    from localqwen_medical.pipeline import _touches_medicine

    greeting = list(run_turn(TurnInputs("Hello, who are you?")))
    assert greeting[-1].result["intent"] == "chat"
    assert "not a substitute" not in greeting[-1].result["answer"]
    assert _touches_medicine("hi", "Sure, ibuprofen helps with that.")  # a misrouted health reply keeps it
    assert not _touches_medicine("hi", "Hello! Nice to meet you.")
