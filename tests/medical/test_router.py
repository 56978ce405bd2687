"""The intent router: rules (zh + en, vignettes, several questions), lenient model-reply parsing,
doubt resolving to medical, and the suite's macro-F1 on the real data."""

from __future__ import annotations

import pytest
from localqwen_medical.router import parse_router_reply, route, route_by_rules
from localqwen_medical.router_suite import default_data_dir, evaluate_router, load_suite


@pytest.mark.parametrize(("text", "intent"), [
    ("你好", "chat"), ("Thanks a lot!", "chat"), ("How do I make pancakes fluffy?", "chat"),
    ("红烧肉怎么做好吃", "chat"), ("孕妇拉肚子能吃什么药", "medical"), ("I have a tummy ache and a fever", "medical"),
    ("What is the dose of ibuprofen for a child? Can I take it with warfarin?", "complex"),
    ("A 45-year-old man presents with crushing chest pain for 2 hours. He is sweating. His blood pressure is "
     "90/60 mmHg. Which of the following is the most appropriate next step in management?", "complex"),
])
def test_rules_route_zh_and_en(text, intent):
    assert route_by_rules(text).intent == intent


def test_complex_turns_are_split_into_parts():
    found = route_by_rules("头疼是什么原因？吃什么药比较好？")
    assert found.intent == "complex" and len(found.parts) == 2


@pytest.mark.parametrize(("reply", "parsed"), [
    ('{"intent": "medical", "confidence": 0.93}', ("medical", 0.93)),
    ("<think>hmm</think>```json\n{'intent': 'chat', 'confidence': 0.95}\n```", ("chat", 0.95)),
    ('intent: complex, confidence = 1.7', ("complex", 1.0)),
    ("medical", ("medical", 0.5)),
    ("I cannot tell", None),
])
def test_model_replies_are_parsed_leniently(reply, parsed):
    assert parse_router_reply(reply) == parsed


class Scripted:
    def __init__(self, reply):
        self.reply = reply

    def complete(self, system, user, *, max_new_tokens=32):
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_doubt_never_becomes_chat():
    # A model that is unsure, or says chat about a turn with a medical word, is overruled: medical.
    assert route("What should I do this weekend?", Scripted('{"intent": "chat", "confidence": 0.55}')).intent == "medical"
    assert route("Is my headache serious?", Scripted('{"intent": "chat", "confidence": 0.99}')).intent == "medical"
    assert route("Hello!", Scripted('{"intent": "chat", "confidence": 0.95}')).intent == "chat"
    # Unusable replies and failing models fall back to the rules, which say why.
    fallback = route("Hello!", Scripted("no idea"))
    assert fallback.intent == "chat" and "no intent" in fallback.source
    assert "failed" in route("头疼怎么办", Scripted(RuntimeError("boom"))).source


@pytest.mark.skipif(not (default_data_dir() / "huatuogpt_eval").is_dir(), reason="../shared/data is not here")
def test_rules_reach_the_macro_f1_target_on_the_suite():
    report = evaluate_router(load_suite())
    assert report["items"] == 300 and report["macro_f1"] >= 0.95
