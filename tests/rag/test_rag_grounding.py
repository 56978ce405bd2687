"""Grounding an answer without trusting the model: sentence attribution, copied source lists,
citations that don't hold, made-up quotes and answers that contradict their own source; and the
Reviewer that a model cannot talk out of those findings (checked with the real tiny Qwen3, which
is never even asked)."""

from __future__ import annotations

import pytest
from localqwen_rag.agents import grounding, responder, reviewer
from localqwen_rag.agents.llm import LLM

from localqwen.retrieval.search import Hit

STATINS = ("Statins lower LDL cholesterol in the blood. Statin therapy reduces the risk of heart attack and "
           "stroke in people with high cholesterol.")
ASPIRIN = "Low dose aspirin is used to prevent blood clots after a heart attack."


@pytest.fixture(scope="module")
def tiny_engine(tiny_qwen3_path):
    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    engine = TransformersEngine(tiny_qwen3_path)
    yield engine
    engine.close()


def _hits() -> list[Hit]:
    return [Hit(STATINS, 0.9, "/docs/statins.md", None, "Statins", "c1"),
            Hit(ASPIRIN, 0.8, "/docs/aspirin.pdf", 2, "", "c2")]


def test_uncited_sentences_are_attributed_or_marked_unsupported():
    answer = responder.finalize("Yes. Statin therapy reduces the risk of heart attack and stroke. "
                                "Aspirin prevents blood clots after a heart attack. "
                                "Bananas are the best source of potassium for marathon runners.", _hits(), True)
    statuses = [s.status for s in answer.grounding.sentences]
    assert statuses == ["neutral", "attributed", "attributed", "unsupported"]
    assert [c["n"] for c in answer.citations] == [1, 2] and {c["by"] for c in answer.citations} == {"attribution"}
    assert answer.model_citations == []
    text = answer.text
    assert "heart attack and stroke [1]." in text and "after a heart attack [2]." in text
    assert f"marathon runners {grounding.UNSUPPORTED_MARK}." in text
    assert text.count("Sources:") == 1 and "[1] statins.md, Statins" in text and "[2] aspirin.pdf, p. 2" in text
    # One unsupported sentence of three judged: a note in the result, not a failed grade.
    assert reviewer.check("Do statins help?", answer) == []


def test_copied_sources_list_is_cut_and_never_counts():
    raw = ("Statins lower LDL cholesterol [1].\n\nSources:\n[1] statins.md, Statins\n[2] aspirin.pdf, p. 2\n")
    answer = responder.finalize(raw, _hits(), True)
    assert answer.body == "Statins lower LDL cholesterol [1]."
    assert [c["n"] for c in answer.citations] == [1] and answer.model_citations == [1]
    assert answer.text.count("Sources:") == 1 and "aspirin.pdf" not in answer.text
    # A bare list with no header is a copy too; an answer made only of it has no citation at all.
    only_list = responder.finalize("The Eiffel Tower is 330 m tall.\n[1] statins.md, Statins\n[2] aspirin.pdf, p. 2",
                                   _hits(), True)
    assert only_list.citations == [] and "statins.md" not in only_list.text
    problems = reviewer.check("How tall is the Eiffel Tower?", only_list)
    assert problems and "no sentence of the answer is supported" in problems[0]


def test_a_citation_that_does_not_support_its_sentence_is_dropped_and_reattributed():
    answer = responder.finalize("Low dose aspirin prevents blood clots after a heart attack [1].", _hits(), True)
    [sentence] = answer.grounding.sentences
    assert sentence.rejected_citations == [1] and sentence.status == "attributed" and sentence.sources == [2]
    assert answer.text.startswith("Low dose aspirin prevents blood clots after a heart attack [2].")


@pytest.mark.parametrize("body, needle", [
    ('The study says "statins raise LDL cholesterol in the blood" [1].', 'quote "statins raise LDL'),
    ("Statins do not lower LDL cholesterol in the blood [1].", "negates its source [1]"),
    ("Statin therapy increases the risk of heart attack and stroke in people with high cholesterol [1].",
     "reverses the direction of its source [1]"),
])
def test_reviewer_retries_a_contradiction_whatever_the_model_says(tiny_engine, body, needle):
    answer = responder.finalize(body, _hits(), True)
    problems = reviewer.check("Do statins lower LDL?", answer)
    assert any(needle in problem for problem in problems), problems
    llm = LLM(tiny_engine, max_new_tokens=8)
    verdict = reviewer.review(llm, "Do statins lower LDL?", answer)
    assert verdict.verdict == "RETRY" and verdict.source.startswith("checks") and llm.calls == 0
    assert any(needle in reason for reason in verdict.reasons)


def test_a_faithful_answer_with_a_real_quote_passes_the_checks():
    answer = responder.finalize('Yes: "Statins lower LDL cholesterol in the blood" [1]. Statin therapy reduces '
                                "the risk of heart attack [1].", _hits(), True)
    assert reviewer.check("Do statins lower LDL?", answer) == []
    assert answer.model_citations == [1] and answer.grounding.contradictions == []


def test_sentence_splitting_keeps_a_trailing_citation_with_its_sentence():
    assert grounding.split_sentences("Statins lower LDL. [1] Aspirin prevents clots.\n- a list item") == [
        "Statins lower LDL. [1]", "Aspirin prevents clots.", "- a list item"]


def test_the_prompt_tag_written_into_an_answer_becomes_a_citation():
    answer = responder.finalize('As <untrusted_document id="2"> says, low dose aspirin prevents blood clots after '
                                "a heart attack.", _hits(), True)
    assert "untrusted_document" not in answer.text and answer.model_citations == [2]
    assert answer.grounding.quote_problems == []  # the tag's quotes are not a quotation


def test_the_responder_reads_the_question_s_sentences_of_long_passages():
    passage = ("Statins are drugs. They were introduced in 1987. Muscle pain is the most common side effect of "
               "statins. The trial ran in Boston. Patients were followed for five years. Statins lower LDL.")
    focused = responder.focus(passage, "What is the most common side effect of statins?", keep=3)
    assert focused.startswith("Statins are drugs.") and "Muscle pain is the most common side effect" in focused
    assert "..." in focused and len(focused) < len(passage)
    assert responder.focus("Short. Passage.", "anything") == "Short. Passage."


def test_a_reply_cut_by_the_token_limit_keeps_its_whole_sentences():
    from localqwen_rag.agents.responder import drop_cut_sentence

    assert drop_cut_sentence("Statins lower LDL [1]. They also reduce the ri") == "Statins lower LDL [1]."
    assert drop_cut_sentence("It works. [2] And then") == "It works. [2]"
    assert drop_cut_sentence("A 2.5 Mb gain [2]. Then p = 0.0") == "A 2.5 Mb gain [2]."  # decimals go on
    assert drop_cut_sentence("它有效。然后") == "它有效。"
    assert drop_cut_sentence("one long cut sentence") == "one long cut sentence"  # nothing whole: keep it
