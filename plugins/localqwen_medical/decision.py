"""A yes / no / maybe decision on a research question from numbered evidence (PubMedQA's form):
issue 13's accuracy measurement with a real model, and the plugin's one decision path.

The model sees what the drafting step shows it (``evidence.numbered``: ``[Evidence n] text``, then
the question) under a system prompt that asks for one word. The label is chosen three ways, the
best the engine can do first:

1. **Scores** (``engine.supports_next_token_scores``: llama.cpp, transformers): one prompt
   evaluation gives the log-probability that the reply begins with each label's first token
   (``LABEL_FORMS``: "yes" and "Yes" both count for yes; each is one token in Qwen's vocabulary).
   The three are renormalised among themselves, a per-model bias from ``decision_calibration.json``
   is added (see ``decision_calibration.py``), and the highest wins. Without a fit for the model no bias is
   added, and the decision says so (``calibrated`` False).
2. **Grammar** (``supports_structured_output``: a remote llama.cpp server): ``LABEL_GRAMMAR`` masks
   every token that would not spell yes, no or maybe, and greedy decoding picks one.
3. **Free text**: the first of the three words in the reply; a reply naming none is counted as
   unanswered (``label`` None), never guessed.

Why scores: a 1.5B model asked to pick greedily said "yes" or "maybe" to nearly everything and
never "no" (52.8% on 53 PubMedQA items, below always-"yes"); its preference among the labels is
still informative once its "yes" bias is corrected, and the bias can only be corrected on scores.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from localqwen_medical.decision_calibration import Calibration, calibration_for
from localqwen_medical.evidence import Passage, numbered

if TYPE_CHECKING:
    from localqwen.plugin_api import CancelToken

LABELS = ("yes", "no", "maybe")
# The reply's first word in the forms a chat model writes it (after the assistant header, no space).
LABEL_FORMS = {"yes": ("yes", "Yes"), "no": ("no", "No"), "maybe": ("maybe", "Maybe")}
LABEL_GRAMMAR = 'root ::= "yes" | "no" | "maybe"'
DECIDE_SYSTEM = (
    "You are a careful medical assistant. Answer the research question using ONLY the numbered evidence. "
    "Reply with one word: yes, no or maybe (maybe when the evidence is mixed or does not settle it).")
NO_EVIDENCE = "(none)"
_LABEL_WORD = re.compile(r"\b(yes|no|maybe)\b", re.IGNORECASE)
AUTO = "auto"  # ``decide(calibration=AUTO)``: the fitted bias for the engine's model, if there is one


@dataclass(frozen=True)
class Decision:
    label: str | None  # "yes" | "no" | "maybe", or None when an unconstrained reply named none
    raw: str  # the model's reply as written ("" when the label came from scores)
    constrained: bool  # whether the label could only be one of the three (scores or grammar)
    prompt_tokens: int = 0
    method: str = "free text"  # "scores" | "grammar" | "free text"
    # With scores: log-probabilities of the three labels renormalised among themselves, the label
    # they give before calibration, the bias added, and whether a fitted bias was found.
    logprobs: dict[str, float] = field(default_factory=dict)
    uncalibrated: str | None = None
    bias: dict[str, float] = field(default_factory=dict)
    calibrated: bool = False
    label_mass: float | None = None  # how much of the whole next-token probability the labels hold


def decision_messages(question: str, passages: list[Passage]) -> list[dict[str, Any]]:
    """System prompt, then the numbered evidence and the question (the same evidence block the
    draft prompt uses, so the decision reads exactly what a drafted answer would cite)."""
    if not question.strip():
        raise ValueError("a decision needs a question; got an empty one")
    user = f"Evidence:\n{numbered(passages) or NO_EVIDENCE}\n\nQuestion: {question.strip()}\nAnswer (yes, no or maybe):"
    return [{"role": "system", "content": DECIDE_SYSTEM}, {"role": "user", "content": user}]


def parse_label(text: str) -> str | None:
    """The first of yes / no / maybe in ``text`` (lower-cased), None when it names none."""
    found = _LABEL_WORD.search(text or "")
    return found.group(1).lower() if found else None


def logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(value - top) for value in values))


def best_label(logprobs: dict[str, float], bias: dict[str, float] | None = None) -> str:
    """The label with the highest score after adding ``bias`` (ties go to the order of LABELS)."""
    bias = bias or {}
    return max(LABELS, key=lambda label: logprobs[label] + bias.get(label, 0.0))


def label_logprobs(engine: Any, messages: list[dict[str, Any]]) -> tuple[dict[str, float], float, int]:
    """Score the labels from one prompt evaluation: (log-probabilities of the three renormalised
    among themselves, the probability the labels hold of the whole vocabulary, prompt tokens).

    A label's forms that share a first token count once; a first token shared by two labels makes
    them indistinguishable, which is refused rather than scored."""
    forms = [(label, form) for label in LABELS for form in LABEL_FORMS[label]]
    scores = engine.next_token_logprobs(messages, [form for _, form in forms])
    owner: dict[int, str] = {}
    per_label: dict[str, dict[int, float]] = {label: {} for label in LABELS}
    for (label, form), token, logprob in zip(forms, scores.tokens, scores.logprobs, strict=True):
        if owner.setdefault(token, label) != label:
            raise ValueError(f"{form!r} begins with the same token as a form of {owner[token]!r} in this "
                             "model's vocabulary; the labels cannot be told apart by their first token")
        per_label[label][token] = logprob
    raw = {label: logsumexp(list(per_label[label].values())) for label in LABELS}
    total = logsumexp(list(raw.values()))
    return {label: raw[label] - total for label in LABELS}, math.exp(total), scores.prompt_tokens


def decide(engine: Any, question: str, passages: list[Passage], *, cancel: CancelToken | None = None,
           calibration: Calibration | str | None = AUTO) -> Decision:
    """The label for ``question`` from ``passages``: scored and calibrated where the engine can
    score (``calibration``: AUTO looks up the engine's model in ``decision_calibration.json``, None
    adds no bias), else forced by ``LABEL_GRAMMAR``, else parsed from a short greedy reply."""
    messages = decision_messages(question, passages)
    if getattr(engine, "supports_next_token_scores", False):
        if cancel is not None:
            cancel.raise_if_cancelled()
        logprobs, mass, prompt_tokens = label_logprobs(engine, messages)
        fit = calibration_for(getattr(engine, "model_id", "")) if calibration == AUTO else calibration
        bias = fit.bias if isinstance(fit, Calibration) else {}
        uncalibrated = best_label(logprobs)
        return Decision(best_label(logprobs, bias), "", True, prompt_tokens, "scores",
                        {label: round(value, 4) for label, value in logprobs.items()}, uncalibrated,
                        dict(bias), bool(bias), round(mass, 4))
    from localqwen.runtime.engine import GenerationSettings

    constrained = bool(getattr(engine, "supports_structured_output", False))
    settings = GenerationSettings(max_new_tokens=3 if constrained else 16, temperature=0.0, seed=0,
                                  grammar=LABEL_GRAMMAR if constrained else None)
    result = engine.chat(messages, settings=settings, cancel=cancel)
    text = result.text.strip()
    label = text if constrained and text in LABELS else parse_label(text)
    return Decision(label, text, constrained, int(getattr(result, "prompt_tokens", 0) or 0),
                    "grammar" if constrained else "free text")
