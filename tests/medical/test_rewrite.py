"""Query rewrite: the term list (zh + en), special-population words always kept, model replies checked."""

from __future__ import annotations

from localqwen_medical.rewrite import population_words, rewrite, rewrite_by_terms


def test_term_list_rewrites_colloquial_words_zh_and_en():
    assert rewrite_by_terms("孕妇拉肚子能吃什么药").query == "孕妇腹泻能吃什么药"
    english = rewrite_by_terms("My kid has a tummy ache and is throwing up")
    assert "abdominal pain" in english.query and "vomiting" in english.query and english.source == "terms"


def test_special_population_words_are_found_and_kept():
    assert sorted(population_words("老人和孕妇都能吃吗")) == sorted(["老人", "孕妇"])
    assert population_words("Is it safe while breastfeeding my baby?") == ["breastfeeding", "baby"]

    class DropsThem:
        def complete(self, system, user, *, max_new_tokens=64):
            return "ibuprofen safety"

    rewritten = rewrite("Can a pregnant woman take ibuprofen for a headache?", DropsThem())
    assert rewritten.source == "model" and rewritten.query == "ibuprofen safety pregnant"


def test_unusable_model_replies_fall_back_to_the_term_list():
    class Rambles:
        def complete(self, system, user, *, max_new_tokens=64):
            return '{"query": ' + "x" * 400 + "}"

    rewritten = rewrite("宝宝发烧了怎么办", Rambles())
    assert rewritten.source == "terms" and rewritten.query.startswith("宝宝发热") and rewritten.note
