"""The quoted rewrite: an answer with nothing grounded is rewritten to open with the passage
sentence closest to the question, written by the app (marked "quote", never counted as the
model's citation), and the model's own sentences after it are still graded."""

from __future__ import annotations

from localqwen_rag.agents import responder, reviewer

from localqwen.retrieval.search import Hit

STATINS = ("Statins lower LDL cholesterol by blocking HMG-CoA reductase in the liver. "
           "Muscle pain is the most common side effect reported by patients. Ok.")
ASPIRIN = 'Aspirin irreversibly inhibits cyclooxygenase and the "production" of thromboxane A2 in platelets.'
QUESTION = "What is the most common side effect of statins?"


def _hit(n: int, text: str) -> Hit:
    return Hit(text=text, score=1.0, source=f"/docs/doc{n}.md", page=None, heading="Drugs", chunk_id=f"c{n}",
               scores={"bm25": 1.0, "dense": 0.5})


EVIDENCE = [_hit(1, ASPIRIN), _hit(2, STATINS)]


def test_the_quote_is_the_shown_sentence_closest_to_the_question():
    pairs = responder.quotable_sentences(EVIDENCE, QUESTION)
    # "Ok." is too short to quote; final stops are dropped (the opening adds '".'); inner quotes become '.
    assert pairs == [(1, "Aspirin irreversibly inhibits cyclooxygenase and the 'production' of thromboxane A2 in platelets"),
                     (2, "Statins lower LDL cholesterol by blocking HMG-CoA reductase in the liver"),
                     (2, "Muscle pain is the most common side effect reported by patients")]
    assert responder.best_quote(EVIDENCE, QUESTION) == (2, "Muscle pain is the most common side effect reported by patients")
    assert responder.best_quote(EVIDENCE, "Who won the 2018 FIFA World Cup?") is None


def _finalize(model_text: str) -> responder.Answer:
    return responder.finalize(model_text, EVIDENCE, True, quote=responder.best_quote(EVIDENCE, QUESTION))


def test_the_opening_quote_is_the_apps_and_the_models_sentences_are_still_graded():
    grounded = _finalize("Muscle pain is the most common side effect of statins [2].")
    assert grounded.body.startswith('Passage [2] reports: "Muscle pain is the most common side effect reported by '
                                    'patients". Muscle pain')
    assert [s.status for s in grounded.grounding.sentences] == ["quoted", "cited"]
    assert grounded.citations[0]["by"] == "model" and grounded.model_citations == [2]
    assert reviewer.check(QUESTION, grounded) == []
    assert "Sources:\n[2] " in grounded.text

    restated = _finalize("Yes, it is true that statins damage the kidneys in most patients.")
    assert [c["by"] for c in restated.citations] == ["quote"] and restated.model_citations == []
    assert restated.text.count("[unsupported]") == 1
    assert reviewer.check(QUESTION, restated) == [reviewer.ONLY_THE_QUOTE]
    # The quote alone is evidence, not an answer; a short "Yes." after it is an answer.
    assert reviewer.check(QUESTION, _finalize("")) == [reviewer.ONLY_THE_QUOTE]
    assert reviewer.check(QUESTION, _finalize("Yes.")) == []


def test_the_rewrite_prompt_carries_the_quote_and_the_stream_shows_it_first(tiny_qwen3_path):
    from localqwen_rag.agents.llm import LLM

    from localqwen.runtime.engine.transformers_backend import TransformersEngine

    messages = responder.build_messages(QUESTION, EVIDENCE, feedback=[reviewer.NOTHING_GROUNDED],
                                        quote=(2, "Muscle pain is the most common side effect reported by patients"))
    assert messages[-1]["content"].endswith(
        'Passage [2] reports: "Muscle pain is the most common side effect reported by patients". Answer the question '
        "from that sentence in one or two short sentences, ending each with [2], or say that it does not answer "
        "the question.")
    engine = TransformersEngine(tiny_qwen3_path)
    try:
        items = list(responder.respond(LLM(engine, max_new_tokens=4), QUESTION, EVIDENCE, used_kb=True,
                                       feedback=[reviewer.NOTHING_GROUNDED], quote=True))
    finally:
        engine.close()
    assert items[0] == 'Passage [2] reports: "Muscle pain is the most common side effect reported by patients". '
    answer = items[-1]
    assert answer.grounding.sentences[0].status == "quoted" and answer.citations[0]["by"] == "quote"
