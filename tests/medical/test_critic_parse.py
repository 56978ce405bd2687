"""The critic's answer as small models really write it: fenced, chatty, cut off, wrong ids,
invented spans. Never a substring test for "PASS"."""

from __future__ import annotations

import json

import pytest
from localqwen_medical.case import AuditCase, Patient
from localqwen_medical.critic import FINDINGS_SCHEMA, critic_messages, parse_critique
from localqwen_medical.findings import RULE_IDS

DRAFT = "Take ibuprofen 800 mg. You definitely have the flu."


def finding(rule, span, message="why"):
    return {"rule": rule, "severity": "major", "span": span, "message": message}


def test_fenced_json_with_prose_around_it():
    text = ("Here is my review:\n```json\n" + json.dumps({"findings": [finding("overconfident_diagnosis",
                                                                               "You definitely have the flu")]})
            + "\n```\nLet me know!")
    critique = parse_critique(text, DRAFT)
    assert critique.error is None
    assert [(f.rule, f.span, f.layer) for f in critique.findings] == [
        ("overconfident_diagnosis", "You definitely have the flu", "critic")]


def test_bare_list_and_trailing_text():
    text = json.dumps([finding("prescription_dose", "800 mg")]) + " Overall: PASS"
    assert [f.rule for f in parse_critique(text, DRAFT).findings] == ["prescription_dose"]


def test_cut_off_output_keeps_complete_items():
    text = '{"findings": [' + json.dumps(finding("prescription_dose", "800mg")) + ', {"rule": "off_scope", "sp'
    critique = parse_critique(text, DRAFT)
    assert [(f.rule, f.span) for f in critique.findings] == [("prescription_dose", "800 mg")]  # respaced to the draft


def test_unknown_rules_and_invented_spans_are_rejected():
    text = json.dumps({"findings": [finding("made_up_rule", "ibuprofen"),
                                    finding("allergy_conflict", "amoxicillin 500 mg"),
                                    finding("overconfident_diagnosis", "you DEFINITELY have the flu")]})
    critique = parse_critique(text, DRAFT)
    assert [f.span for f in critique.findings] == ["You definitely have the flu"]
    assert len(critique.rejected) == 2
    assert "made_up_rule" in critique.rejected[0] and "not in the draft" in critique.rejected[1]


def test_pass_text_is_an_error_not_a_pass():
    for text in ("PASS", "The draft looks fine. PASS.", ""):
        critique = parse_critique(text, DRAFT)
        assert critique.findings == [] and critique.error


def test_empty_findings_is_a_clean_answer():
    critique = parse_critique('<think>checking</think>{"findings": []}', DRAFT)
    assert critique.findings == [] and critique.error is None


def test_severity_is_the_rules_own():
    text = json.dumps([{"rule": "prescription_dose", "severity": "minor", "span": "800 mg", "message": "x"}])
    assert parse_critique(text, DRAFT).findings[0].severity == "critical"


def test_prompt_names_every_rule_and_the_patient():
    case = AuditCase("Flu?", DRAFT, patient=Patient(allergies=["penicillin"]))
    system, user = critic_messages(case)
    assert all(rule in system["content"] for rule in RULE_IDS)
    assert "penicillin" in user["content"] and DRAFT in user["content"]
    assert set(FINDINGS_SCHEMA["properties"]["findings"]["items"]["properties"]["rule"]["enum"]) == set(RULE_IDS)


def test_stray_bracket_the_real_model_wrote_is_repaired():
    draft = "曲马多是不错的选择。"
    text = ('{"findings": [{"rule": "drug_interaction", "severity": "major", "span": "曲马多是不错的选择", '
            '"message": "对儿童可能有副作用。"]}]}')  # verbatim shape from Qwen2.5-Coder-1.5B
    critique = parse_critique(text, draft)
    assert critique.error is None and [f.rule for f in critique.findings] == ["drug_interaction"]


@pytest.mark.slow  # the Gemma 270M GGUF writing JSON: ~20-60 s on a busy 2-core CPU
def test_a_llama_cpp_critic_is_forced_into_the_findings_schema(gemma_gguf_path):
    # A 270M model asked in prose often answers in prose; with the schema as a grammar its reply
    # is always JSON the parser reads (whatever it finds is then checked rule by rule).
    from localqwen_medical.critic import critique

    from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

    with LlamaCppEngine(gemma_gguf_path, n_ctx=2048, n_threads=2) as engine:
        said = critique(AuditCase("Can I take ibuprofen for a headache?", DRAFT), engine, max_new_tokens=160)
    assert said.error is None, said.raw
    assert said.raw.lstrip().startswith('{"findings"') or said.raw.lstrip().startswith("{")
    if said.raw.rstrip().endswith("}"):
        assert isinstance(json.loads(said.raw)["findings"], list)
