"""LoCoMo question answering with a real model: the scoring and the inputs, no model here.

``bench/bench_memory_real.py`` asks LoCoMo's questions with memory recall and with the last 8K
tokens of the conversation; this module holds its pure parts, tested on their own:

- :func:`locomo_f1`: LoCoMo's token F1 (``task_eval/evaluation.py`` of snap-research/locomo):
  lower-case, commas, punctuation and the words a / an / the / and removed; category 1
  (multi-hop) answers are comma-separated lists scored item by item; for category 3 only the
  part of the gold answer before a ";" counts. One difference: LoCoMo stems every token with
  NLTK's Porter stemmer; NLTK is not a dependency here, so tokens are compared unstemmed
  ("painted" and "painting" do not match), which can only lower the F1.
- :func:`choose_questions`: the fixed, seeded question subset, listed by id ("conv-26:q17").
- :func:`transcript_lines`, :func:`tail_cut`: the conversation as dated text and its last N
  tokens, cut at whole lines.

The memory store is filled as the recall suite fills it (``locomo_eval.fill_store``).
"""

from __future__ import annotations

import random
import re
import string
from collections import Counter
from collections.abc import Callable
from typing import Any

from localqwen_memory.relative_dates import MONTHS  # the prompt writes dates with the same month names

QA_CATEGORIES = (1, 2, 3, 4)  # category 5 (adversarial, unanswerable) is left out
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: Any) -> str:
    """LoCoMo's answer normalisation (without stemming): lower-case, no commas, no punctuation,
    no a / an / the / and, single spaces. Gold answers may be numbers (a year): made text first."""
    text = str(text).replace(",", "").lower()
    text = text.translate(_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: Any, truth: Any) -> float:
    """Token F1 between one prediction and one gold answer after :func:`normalize_answer`."""
    predicted = normalize_answer(prediction).split()
    wanted = normalize_answer(truth).split()
    common = Counter(predicted) & Counter(wanted)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: Any, truth: Any) -> float:
    """Category 1: the gold answer is a comma-separated list; each gold item takes its best match
    among the prediction's comma-separated items, and the items' scores are averaged."""
    predictions = [p.strip() for p in str(prediction).split(",")]
    truths = [t.strip() for t in str(truth).split(",")]
    return sum(max(token_f1(p, t) for p in predictions) for t in truths) / len(truths)


def locomo_f1(prediction: Any, truth: Any, category: int) -> float:
    """The F1 LoCoMo gives an answer of ``category`` (1-4; 5 is not scored by F1)."""
    if category == 1:
        return multi_answer_f1(prediction, truth)
    if category == 3:
        truth = str(truth).split(";")[0].strip()
    if category in (2, 3, 4):
        return token_f1(prediction, truth)
    raise ValueError(f"LoCoMo F1 is defined for categories 1-4, got {category!r}")


_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


def iso_dates_as_words(text: str) -> str:
    """ISO dates ("2023-05-07") written as LoCoMo's answers write them ("7 May 2023"). A small model
    answers in the form its prompt dates memories in, and the ISO form shares no token with the gold
    answer (the recall prompt used it until the QA run measured that; records of that run still hold
    ISO answers); the bench reports the F1 after this rewrite beside the official one."""
    def words(match: re.Match[str]) -> str:
        year, month, day = (int(part) for part in match.groups())
        return f"{day} {MONTHS[month - 1]} {year}" if 1 <= month <= 12 and 1 <= day <= 31 else match.group(0)

    return _ISO_DATE.sub(words, str(text))


def question_id(sample: dict[str, Any], index: int) -> str:
    return f"{sample['sample_id']}:q{index}"


def choose_questions(samples: list[dict[str, Any]], count: int, seed: int,
                     categories: tuple[int, ...] = QA_CATEGORIES) -> list[dict[str, Any]]:
    """``count`` questions drawn with ``seed`` from every question of ``categories`` in ``samples``
    (pooled, so each conversation gets its share), returned grouped by conversation and in the
    conversation's order: one conversation's questions run one after another (the long context
    is then evaluated once per conversation). Each carries its id, conversation index and answer."""
    pool = []
    for number, sample in enumerate(samples):
        for index, qa in enumerate(sample["qa"]):
            if qa.get("category") in categories and "answer" in qa:
                pool.append({"id": question_id(sample, index), "conversation": number, "index": index,
                             "question": qa["question"], "answer": str(qa["answer"]), "category": qa["category"]})
    if count > len(pool):
        raise ValueError(f"asked for {count} questions but the conversations hold only {len(pool)} of categories "
                         f"{list(categories)}")
    chosen = random.Random(seed).sample(pool, count)
    return sorted(chosen, key=lambda q: (q["conversation"], q["index"]))


def transcript_lines(turns: list[dict[str, Any]]) -> list[str]:
    """The conversation (``locomo_eval.turns_of``) as text lines: a dated header before each
    session, then one "Speaker: text" line per turn."""
    lines: list[str] = []
    session = None
    for turn in turns:
        if turn["session"] != session:
            session = turn["session"]
            lines.append(f"[Session {session}, {turn['date']}]")
        lines.append(f"{turn['speaker']}: {turn['text']}")
    return lines


def tail_cut(lines: list[str], count_tokens: Callable[[str], int], budget: int) -> tuple[str, int]:
    """The longest run of whole last ``lines`` whose joined text has at most ``budget`` tokens
    (``count_tokens`` is the model's tokenizer), and its token count. Lines are counted one by one
    from the end, then the joined text is checked (tokens can merge across a line break) and its
    first lines dropped while it is over."""
    if budget <= 0:
        raise ValueError(f"the token budget must be positive, got {budget}")
    total, start = 0, len(lines)
    while start > 0:
        cost = count_tokens(lines[start - 1] + "\n")
        if total + cost > budget:
            break
        total += cost
        start -= 1
    while start < len(lines):
        text = "\n".join(lines[start:])
        tokens = count_tokens(text)
        if tokens <= budget:
            return text, tokens
        start += 1
    return "", 0
