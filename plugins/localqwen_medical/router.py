"""Which path a turn takes: ``chat`` (answer directly), ``medical`` (rewrite, retrieve, draft, audit)
or ``complex`` (several questions, or a clinical vignette: split, retrieve per part, then the same).

Rules are the cold start and the fallback: cue words (terms.py, zh + en), drug and disease name
endings, clinical-vignette and multi-question detection. A model, when given, is asked for JSON
``{"intent": ..., "confidence": ...}``; its reply is parsed leniently (thinking blocks, code fences,
single quotes, a bare label). Doubt always resolves to ``medical``, never to ``chat``: a health
question answered as chit-chat skips the evidence and the audit, the opposite costs only time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from localqwen_medical import terms

Intent = Literal["chat", "medical", "complex"]
INTENTS: tuple[str, ...] = ("chat", "medical", "complex")
MIN_CONFIDENCE = 0.6  # below this a model's or the rules' verdict becomes "medical"
MIN_CHAT_CONFIDENCE = 0.8  # a model must be this sure to send a turn with no medical cue to chat

_CJK = re.compile(r"[\u4e00-\u9fff]")
_EN_WORD = re.compile(r"[a-z][a-z\-']*")
_VIGNETTE_EN = re.compile(r"\b\d{1,3}[- ](?:year|month|week|day)s?[- ]old\b", re.I)
_VIGNETTE_ZH = re.compile(r"\d{1,3}\s*(?:岁|个月大)")
# A lab value asked about ("nt0.30高吗", "ALT 60 U/L"): a test result, so a medical question.
_LAB_VALUE = re.compile(r"[a-z]{2,6}\s*\d+(?:\.\d+)?\s*(?:[a-z/]{1,6})?\s*(?:高|低|偏|正常|异常|high|low|normal)", re.I)
_CLAUSE_SPLIT = re.compile(r"(?<=[？?。！!；;])|\n+")
_QUESTION_ZH = ("什么", "怎么", "怎样", "哪些", "哪里", "哪个", "吗", "多少", "是否", "如何", "为什么", "能不能",
                "可不可以", "会不会", "有没有", "要不要", "咋", "呢", "几")
_QUESTION_EN = re.compile(r"^(?:what|how|why|which|when|where|who|should|can|could|is|are|do|does|did|will|"
                          r"would|may|might|has|have)\b", re.I)


@dataclass
class Route:
    intent: Intent
    confidence: float
    source: str  # "rules", "model", or "rules" with why the model was not used
    reason: str
    parts: list[str] = field(default_factory=list)  # sub-questions of a complex turn
    cues: list[str] = field(default_factory=list)  # the medical cue words the rules found

    def to_dict(self) -> dict[str, Any]:
        return {"intent": self.intent, "confidence": round(self.confidence, 3), "source": self.source,
                "reason": self.reason, "parts": list(self.parts), "cues": list(self.cues)}


# ---------------------------------------------------------------- rules
def medical_cues(text: str) -> list[str]:
    """The medical cue words in ``text`` (zh substrings, en word starts, drug/disease endings)."""
    lowered = text.lower()
    for word in terms.NOT_MEDICAL_ZH:
        lowered = lowered.replace(word, " ")
    found = [cue for cue in terms.MEDICAL_ZH if cue in lowered]
    words = _EN_WORD.findall(lowered)
    for cue in terms.MEDICAL_EN:
        if " " in cue:
            if cue in lowered:
                found.append(cue)
        elif cue.endswith("$"):
            if cue[:-1] in words:
                found.append(cue[:-1])
        elif any(word.startswith(cue) for word in words):
            found.append(cue)
    lab = _LAB_VALUE.search(lowered)
    if lab:
        found.append(lab.group(0))
    for word in words:
        if len(word) >= 8 and word.endswith(terms.MEDICAL_SUFFIXES_EN) and word not in found:
            found.append(word)
    return found


def chat_cues(text: str) -> list[str]:
    lowered = f" {text.lower()} "
    return [cue for cue in (*terms.CHAT_ZH, *terms.CHAT_EN) if cue in lowered]


def question_clauses(text: str) -> list[str]:
    """The clauses of ``text`` that ask something (split at ? 。 ; ! and line breaks)."""
    clauses = []
    for raw in _CLAUSE_SPLIT.split(text):
        clause = raw.strip(" \t_-—,，")
        if len(clause) < 3:
            continue
        asks = clause.endswith(("?", "？")) or bool(_QUESTION_EN.match(clause))
        if _CJK.search(clause):
            asks = asks or any(word in clause for word in _QUESTION_ZH)
        if asks:
            clauses.append(clause.rstrip("?？").strip())
    return clauses


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?。！？；;])\s*", text)
    return [p.strip() for p in parts if len(p.strip()) > 2]


def is_vignette(text: str) -> bool:
    """A clinical case description: an age, several sentences and a question at the end."""
    if _CJK.search(text):
        return bool(_VIGNETTE_ZH.search(text)) and len(text) >= 60 and len(sentences(text)) >= 3
    return bool(_VIGNETTE_EN.search(text)) and len(text) >= 150 and len(sentences(text)) >= 3


def split_questions(text: str) -> list[str]:
    """Sub-questions to retrieve for separately: each asked clause; for a vignette, its opening
    (who and what they present with), its findings and the final question."""
    asked = question_clauses(text)
    if is_vignette(text):
        said = sentences(text)
        question = asked[-1] if asked else said[-1]
        parts = [question, *said[:2]]
        return list(dict.fromkeys(p for p in parts if p))
    return asked if len(asked) >= 2 else [text.strip()]


def route_by_rules(text: str) -> Route:
    text = text.strip()
    cues = medical_cues(text)
    if not text:
        return Route("chat", 1.0, "rules", "empty message")
    if cues:
        if is_vignette(text):
            return Route("complex", 0.9, "rules", "a clinical vignette", split_questions(text), cues)
        asked = question_clauses(text)
        if len(asked) >= 2:
            return Route("complex", 0.8, "rules", f"{len(asked)} questions in one turn", asked, cues)
        confidence = 0.9 if len(cues) >= 2 else 0.75
        return Route("medical", confidence, "rules", f"medical cue(s): {', '.join(cues[:5])}", [text], cues)
    chatty = chat_cues(text)
    if chatty:
        return Route("chat", 0.9, "rules", f"chit-chat cue(s): {', '.join(chatty[:3])}")
    long_text = len(_EN_WORD.findall(text.lower())) > 25 or len(_CJK.findall(text)) > 40
    if long_text:  # a long message with no cue may still describe a health problem in plain words
        return Route("medical", 0.5, "rules", "no cue either way in a long message: treated as medical", [text])
    return Route("chat", 0.7, "rules", "no medical cue")


# ---------------------------------------------------------------- model
ROUTER_SYSTEM = (
    "You classify one user message for a medical assistant. Reply with JSON only, like "
    '{"intent": "medical", "confidence": 0.9}. intent is "chat" (greetings, thanks, small talk, '
    'anything not about health), "medical" (one health, symptom, drug, test or treatment question) or '
    '"complex" (several health questions at once, or a clinical case description with a question). '
    "confidence is a number from 0 to 1.")

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S)
_OBJECT = re.compile(r"\{[^{}]*\}", re.S)
_INTENT_FIELD = re.compile(r"""["']?intent["']?\s*[:=]\s*["']?(chat|medical|complex)""", re.I)
_CONFIDENCE_FIELD = re.compile(r"""["']?confidence["']?\s*[:=]\s*["']?([01](?:\.\d+)?|\.\d+)""", re.I)


def parse_router_reply(reply: str) -> tuple[str, float] | None:
    """``(intent, confidence)`` from a model's reply, or None when it names no intent.

    Tolerates thinking blocks, code fences, single quotes, trailing text, a missing confidence
    (then 0.5, i.e. "not sure") and a bare label; a confidence outside 0..1 is clipped."""
    text = _THINK.sub("", reply or "").strip()
    for blob in _OBJECT.findall(text):
        for candidate in (blob, blob.replace("'", '"')):
            try:
                data = json.loads(candidate)
            except json.JSONDecodeError:
                continue
            intent = str(data.get("intent", "")).strip().lower() if isinstance(data, dict) else ""
            if intent in INTENTS:
                return intent, _confidence(data.get("confidence"))
    match = _INTENT_FIELD.search(text)
    if match:
        found = _CONFIDENCE_FIELD.search(text)
        return match.group(1).lower(), _confidence(found.group(1) if found else None)
    words = set(re.findall(r"[a-z]+", text.lower())) & set(INTENTS)
    if len(words) == 1:
        return words.pop(), 0.5
    return None


def _confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.5
    if number != number:  # NaN
        return 0.5
    return min(1.0, max(0.0, number))


def route(text: str, llm: Any = None, *, max_new_tokens: int = 32) -> Route:
    """The turn's route. ``llm`` (anything with ``complete(system, user, max_new_tokens=)``) asks a
    model; without one, or when its reply names no intent or the call fails, the rules decide."""
    rules = route_by_rules(text)
    if llm is None or not text.strip():
        return _settle(rules, text)
    try:
        reply = llm.complete(ROUTER_SYSTEM, text.strip(), max_new_tokens=max_new_tokens)
    except Exception as exc:  # a model failure must not stop the turn; the rules still route it
        rules.source = f"rules (router model failed: {type(exc).__name__})"
        return _settle(rules, text)
    parsed = parse_router_reply(reply)
    if parsed is None:
        rules.source = "rules (router model reply had no intent)"
        return _settle(rules, text)
    intent, confidence = parsed
    if intent == "chat" and (rules.cues or confidence < MIN_CHAT_CONFIDENCE):
        # A medical word in the turn, or a model that is not sure: the safe path.
        why = "the rules found medical cues" if rules.cues else f"model confidence {confidence:.2f}"
        settled = "complex" if rules.intent == "complex" else "medical"
        return Route(settled, confidence, "model", f"model said chat, but {why}",
                     rules.parts or [text.strip()], rules.cues)
    if intent != "chat" and confidence < MIN_CONFIDENCE:
        return Route("medical" if rules.intent != "complex" else "complex", confidence, "model",
                     f"model said {intent} with low confidence", rules.parts or [text.strip()], rules.cues)
    parts = split_questions(text) if intent == "complex" else ([text.strip()] if intent == "medical" else [])
    return Route(intent, confidence, "model", f"model: {intent}", parts, rules.cues)  # type: ignore[arg-type]


def _settle(found: Route, text: str) -> Route:
    """Low confidence never means chat."""
    if found.intent == "chat" and found.confidence < MIN_CONFIDENCE:
        return Route("medical", found.confidence, found.source, f"{found.reason}; unsure, so medical",
                     [text.strip()], found.cues)
    return found
