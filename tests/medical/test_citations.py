"""Citation parsing/cleaning and unsupported numbers, in English and Chinese."""

from __future__ import annotations

import pytest
from localqwen_medical.citations import (
    cited_ids,
    drop_invalid_citations,
    find_quantities,
    parse_citations,
    unsupported_quantities,
)


@pytest.mark.parametrize(("text", "ids"), [
    ("Rest [Evidence 1].", {1}),
    ("Rest [evidence 1, 3].", {1, 3}),
    ("休息[证据2]。", {2}),
    ("休息[证据 2、4]。", {2, 4}),
    ("休息【证据3】。", {3}),
    ("See [Evidence 2-4].", {2, 3, 4}),
    ("No citation here [1] (Evidence 2).", set()),
])
def test_parse_forms(text, ids):
    assert cited_ids(text) == ids


def test_marker_text_and_position():
    text = "Drink water [Evidence 1, 3]."
    (citation,) = parse_citations(text)
    assert text[citation.start:citation.end] == citation.text == "[Evidence 1, 3]"
    assert citation.ids == (1, 3)


def test_drop_invalid_keeps_valid_ids():
    cleaned = drop_invalid_citations("Rest [Evidence 1, 7]. Fluids [Evidence 9]. 休息[证据2]。", {1, 2})
    assert cleaned.text == "Rest [Evidence 1]. Fluids. 休息[证据2]。"
    assert cleaned.removed_ids == [7, 9]
    assert [c.text for c in cleaned.removed] == ["[Evidence 1, 7]", "[Evidence 9]"]


def test_drop_invalid_noop_when_all_valid():
    text = "Rest [Evidence 1]."
    cleaned = drop_invalid_citations(text, [1])
    assert cleaned.text == text and cleaned.removed == [] and cleaned.removed_ids == []


def test_quantities_and_units():
    found = find_quantities("Take 200-400 mg, 每日3次, 0.5克, twice daily, 5 ml; 3 glasses of water [Evidence 12].")
    assert [(q.value, q.unit) for q in found] == [
        (200, "mg"), (400, "mg"), (3, "/day"), (500, "mg"), (2, "/day"), (5, "ml")]


def test_unsupported_quantities_converts_units():
    evidence = ["Paracetamol 0.5 g every 4 to 6 hours, no more than 4 times a day."]
    assert unsupported_quantities("Take 500 mg every 6 hours, four times a day.", evidence) == []
    (missing,) = unsupported_quantities("Take 1000 mg at once.", evidence)
    assert missing.text == "1000 mg"
    (missing,) = unsupported_quantities("布洛芬每次300毫克。", ["布洛芬每次200毫克。"])
    assert missing.text == "300毫克"
