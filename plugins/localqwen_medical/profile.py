"""The patient profile (entity memory): allergies, current medications, conditions, age, sex and
pregnancy, each fact with the turn it came from.

It lives in the chat session's metadata under ``"profile"`` (a JSON-able dict), so it survives a
restart and every frontend can show it. Each user turn goes through :func:`update_from_turn`: the
model extracts the facts as JSON when an engine is given, and the rules of ``profile_patterns``
fill whatever the model left out (and do all the work without a model). Later turns supersede
earlier ones: a new age replaces the old one, "I'm not allergic to penicillin" / "对青霉素不过敏"
removes it, "I stopped taking X" removes a medication. People (and the UI) edit it with
:func:`apply_edit`: ``set allergies penicillin, sulfa`` / ``add`` / ``remove`` / ``clear``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from localqwen_medical.profile_patterns import TurnFacts, canonical, extract_patterns
from localqwen_medical.router import medical_cues

if TYPE_CHECKING:
    from localqwen_medical.case import Patient

METADATA_KEY = "profile"
LIST_FIELDS = ("allergies", "medications", "conditions")
SINGLE_FIELDS = ("age", "sex", "pregnant")
FIELDS = (*LIST_FIELDS, *SINGLE_FIELDS)
SEXES = ("female", "male", "other")


class ProfileEditError(ValueError):
    """An edit command that cannot be applied; the message says what was wrong and what works."""


@dataclass
class Fact:
    value: Any
    turn: int  # the user turn (1-based) it came from; 0 for an edit made beside the chat
    source: str = "pattern"  # "model", "pattern" or "edit"
    detail: str = ""  # e.g. "34 weeks" for a pregnancy

    def to_dict(self) -> dict[str, Any]:
        data = {"value": self.value, "turn": self.turn, "source": self.source}
        if self.detail:
            data["detail"] = self.detail
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fact:
        return cls(data["value"], int(data.get("turn", 0)), str(data.get("source", "pattern")),
                   str(data.get("detail", "")))


@dataclass
class Profile:
    allergies: list[Fact] = field(default_factory=list)
    medications: list[Fact] = field(default_factory=list)
    conditions: list[Fact] = field(default_factory=list)
    age: Fact | None = None
    sex: Fact | None = None
    pregnant: Fact | None = None
    # "No known allergies" said by the patient: different from never asked (an empty list).
    no_known_allergies: Fact | None = None

    # -- storage ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {name: [f.to_dict() for f in getattr(self, name)] for name in LIST_FIELDS}
        for name in (*SINGLE_FIELDS, "no_known_allergies"):
            fact = getattr(self, name)
            data[name] = fact.to_dict() if fact else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Profile:
        data = data or {}
        profile = cls()
        for name in LIST_FIELDS:
            setattr(profile, name, [Fact.from_dict(f) for f in data.get(name) or []])
        for name in (*SINGLE_FIELDS, "no_known_allergies"):
            if data.get(name):
                setattr(profile, name, Fact.from_dict(data[name]))
        return profile

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> Profile:
        return cls.from_dict(metadata.get(METADATA_KEY))

    def save(self, metadata: dict[str, Any]) -> None:
        """Write into a session's metadata (the host stores it after the turn)."""
        metadata[METADATA_KEY] = self.to_dict()

    # -- reading ---------------------------------------------------------------------------
    def values(self, name: str) -> list[str]:
        return [str(f.value) for f in getattr(self, name)]

    def to_patient(self) -> Patient:
        """The auditor's view of this person (med-audit's ``Patient``)."""
        from localqwen_medical.case import Patient

        return Patient(allergies=self.values("allergies"), medications=self.values("medications"),
                       conditions=self.values("conditions"), age=self.age.value if self.age else None,
                       sex=self.sex.value if self.sex else None,
                       pregnant=self.pregnant.value if self.pregnant else None)

    def is_empty(self) -> bool:
        return self == Profile()

    def lines(self) -> list[str]:
        """One line per field, for the side panel and the prompts (the turn in brackets)."""
        def show(facts: list[Fact]) -> str:
            return ", ".join(f"{f.value} [turn {f.turn}]" if f.turn else str(f.value) for f in facts)

        allergies = show(self.allergies) or ("none known" if self.no_known_allergies else "not stated")
        out = [f"allergies: {allergies}", f"medications: {show(self.medications) or 'not stated'}",
               f"conditions: {show(self.conditions) or 'not stated'}"]
        for name in SINGLE_FIELDS:
            fact = getattr(self, name)
            if fact is None:
                out.append(f"{name}: not stated")
            else:
                shown = {True: "yes", False: "no"}.get(fact.value, fact.value) if name == "pregnant" else fact.value
                if name == "age" and isinstance(shown, float) and shown.is_integer():
                    shown = int(shown)
                detail = f" ({fact.detail})" if fact.detail else ""
                out.append(f"{name}: {shown}{detail}" + (f" [turn {fact.turn}]" if fact.turn else ""))
        return out

    def summary(self) -> str:
        return "; ".join(self.lines())

    def update_from_turn(self, text: str, turn: int, engine: Any = None) -> TurnFacts:
        """Read one user turn into this profile (see the module function)."""
        return update_from_turn(self, text, turn, engine)

    # -- changing --------------------------------------------------------------------------
    def _add(self, name: str, value: str, turn: int, source: str) -> None:
        value = value.strip()
        if not value:
            return
        facts: list[Fact] = getattr(self, name)
        if any(canonical(f.value) == canonical(value) for f in facts):
            return  # said again: keep the turn it was first said
        facts.append(Fact(value, turn, source))
        if name == "allergies":
            self.no_known_allergies = None

    def _remove(self, name: str, value: str) -> int:
        facts: list[Fact] = getattr(self, name)
        key = canonical(value)
        kept = [f for f in facts if canonical(f.value) != key]
        setattr(self, name, kept)
        return len(facts) - len(kept)

    def apply(self, facts: TurnFacts, turn: int, source: str = "pattern") -> None:
        """Merge what one turn said: retractions first, then additions; single values supersede."""
        for value in facts.not_allergies:
            self._remove("allergies", value)
        for value in facts.stopped_medications:
            self._remove("medications", value)
        for value in facts.resolved_conditions:
            self._remove("conditions", value)
        for value in facts.allergies:
            self._add("allergies", value, turn, source)
        for value in facts.medications:
            self._add("medications", value, turn, source)
        for value in facts.conditions:
            self._add("conditions", value, turn, source)
        # "No known allergies" never deletes an allergy already stated (that needs an explicit
        # "not allergic to X" or an edit): a vague remark must not drop a safety fact.
        if facts.no_known_allergies and not self.allergies:
            self.no_known_allergies = Fact(True, turn, source)
        if facts.age is not None:
            self.age = Fact(facts.age, turn, source)
        if facts.sex is not None:
            self.sex = Fact(facts.sex, turn, source)
        if facts.pregnant is not None:
            weeks = f"{facts.pregnancy_weeks} weeks" if facts.pregnant and facts.pregnancy_weeks else ""
            self.pregnant = Fact(facts.pregnant, turn, source, weeks)
            if facts.pregnant and self.sex is None:
                self.sex = Fact("female", turn, source)


# -- extraction by the model -----------------------------------------------------------------
EXTRACTION_PROMPT = """Extract what this patient message says about the patient (the person asking, or the child they ask about; never relatives).
Answer with one JSON object only, no prose, with these keys:
{"allergies": [], "not_allergic_to": [], "no_known_allergies": false, "medications": [], "stopped_medications": [],
 "conditions": [], "age": null, "sex": null, "pregnant": null, "pregnancy_weeks": null}
allergies: substances the patient is allergic to. not_allergic_to: ones the patient says they are NOT allergic to (corrections).
medications: drugs the patient takes now. conditions: chronic diagnoses (diabetes, asthma...), not symptoms.
age in years (number), sex "female" or "male", pregnant true/false. Use null or [] for anything not said.
Known profile so far: {known}
Message: {message}"""


def parse_model_facts(text: str) -> TurnFacts | None:
    """The model's JSON answer as facts, or ``None`` when no usable object is in it.

    Tolerates thinking blocks, code fences, prose around the object, single quotes, trailing
    commas and Python literals; drops fields with the wrong type instead of failing the turn."""
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    raw = text[start:end + 1]
    data: Any = None
    for candidate in (raw, _loosen(raw)):
        try:
            data = json.loads(candidate)
            break
        except json.JSONDecodeError:
            continue
    if not isinstance(data, dict):
        return None

    def strings(key: str) -> list[str]:
        value = data.get(key)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            return []
        return [v.strip() for v in value if isinstance(v, str) and v.strip() and v.strip().lower() not in
                {"none", "null", "unknown", "n/a", "无", "没有"}]

    facts = TurnFacts(allergies=strings("allergies"), not_allergies=strings("not_allergic_to"),
                      no_known_allergies=data.get("no_known_allergies") is True,
                      medications=strings("medications"), stopped_medications=strings("stopped_medications"),
                      conditions=strings("conditions"))
    age = data.get("age")
    if isinstance(age, str) and re.fullmatch(r"\d{1,3}(?:\.\d+)?", age.strip()):
        age = float(age)
    if isinstance(age, (int, float)) and not isinstance(age, bool) and 0 <= age <= 130:
        facts.age = float(age)
    sex = data.get("sex")
    if isinstance(sex, str):
        facts.sex = {"male": "male", "m": "male", "男": "male", "female": "female", "f": "female",
                     "女": "female"}.get(sex.strip().lower())
    if isinstance(data.get("pregnant"), bool):
        facts.pregnant = data["pregnant"]
    weeks = data.get("pregnancy_weeks")
    if facts.pregnant and isinstance(weeks, int) and not isinstance(weeks, bool) and 0 < weeks <= 45:
        facts.pregnancy_weeks = weeks
    return facts


def _loosen(raw: str) -> str:
    """Near-JSON to JSON: single quotes, trailing commas, Python's True/False/None."""
    text = re.sub(r",\s*([}\]])", r"\1", raw)
    text = re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", re.sub(r"\bNone\b", "null", text)))
    if '"' not in text:
        text = text.replace("'", '"')
    return text


def extract_with_model(text: str, engine: Any, profile: Profile | None = None) -> TurnFacts | None:
    from localqwen.runtime.engine import GenerationSettings

    known = profile.summary() if profile is not None and not profile.is_empty() else "nothing yet"
    prompt = EXTRACTION_PROMPT.replace("{known}", known).replace("{message}", text)
    result = engine.chat([{"role": "user", "content": prompt}], settings=GenerationSettings(max_new_tokens=256))
    return parse_model_facts(result.text)


def _fill_gaps(model: TurnFacts, rules: TurnFacts) -> TurnFacts:
    """The model's facts, with the rules' answer for every field the model left empty (a small model
    often misses a field; a safety fact such as an allergy should not depend on it)."""
    merged = TurnFacts(**{k: (list(v) if isinstance(v, list) else v) for k, v in vars(model).items()})
    for name, value in vars(rules).items():
        if getattr(merged, name) in (None, [], False) and value not in (None, [], False):
            setattr(merged, name, value)
    if merged.pregnant and merged.pregnancy_weeks is None:
        merged.pregnancy_weeks = rules.pregnancy_weeks
    return merged


def worth_reading_with_model(text: str, rules: TurnFacts) -> bool:
    """Whether a turn could state something about the patient that the model should read: the
    rules found a fact, or it has a medical cue word (a drug, a symptom, "allergic", "pregnant"),
    a number (an age, a dose), or is long. "Hello" or "thanks" is none of these, and the model's
    256-token extraction (10-30 s on a CPU) would run before the greeting is answered."""
    if not rules.empty():
        return True
    words = re.findall(r"\w+", text)
    return bool(medical_cues(text)) or bool(re.search(r"\d", text)) or len(words) > 25 or len(text) > 80


def update_from_turn(profile: Profile, text: str, turn: int, engine: Any = None) -> TurnFacts:
    """Read one user turn into ``profile`` (in place); returns the facts it found.

    With an engine the model extracts (JSON prompt) when the turn is worth it
    (``worth_reading_with_model``); a reply that is not usable JSON, or a model that fails, falls
    back to the rules alone."""
    rules = extract_patterns(text)
    facts, source = rules, "pattern"
    if engine is not None and worth_reading_with_model(text, rules):
        from localqwen.plugin_api import Cancelled

        try:
            from_model = extract_with_model(text, engine, profile)
        except Cancelled:
            raise  # the user stopped the turn: stop, do not carry on with the rules
        except Exception:  # a model that cannot answer must not lose the turn's facts
            from_model = None
        if from_model is not None and not from_model.empty():
            facts, source = _fill_gaps(from_model, rules), "model"
    profile.apply(facts, turn, source)
    return facts


# -- edits (UI panel and chat commands) --------------------------------------------------------
EDIT_HELP = ("profile edits: 'set FIELD VALUES', 'add FIELD VALUES', 'remove FIELD VALUE', 'clear FIELD' or "
             "'clear all'; FIELD is one of " + ", ".join(FIELDS) + " (lists take comma-separated values; age is "
             "years, sex is female/male/other, pregnant is yes/no or e.g. '34 weeks')")
_FIELD_ALIASES = {"allergy": "allergies", "allergies": "allergies", "medication": "medications",
                  "medications": "medications", "meds": "medications", "drugs": "medications",
                  "condition": "conditions", "conditions": "conditions", "age": "age", "sex": "sex", "gender": "sex",
                  "pregnant": "pregnant", "pregnancy": "pregnant", "过敏": "allergies", "用药": "medications",
                  "疾病": "conditions", "年龄": "age", "性别": "sex", "怀孕": "pregnant"}


def _field(name: str) -> str:
    key = _FIELD_ALIASES.get(name.strip().lower())
    if key is None:
        raise ProfileEditError(f"unknown profile field '{name}'; use one of {', '.join(FIELDS)}")
    return key


def _single_value(name: str, raw: str) -> Fact:
    text = raw.strip().lower()
    if name == "age":
        m = re.fullmatch(r"(\d{1,3}(?:\.\d+)?)\s*(?:years?|y|岁)?", text)
        if not m or not 0 <= float(m.group(1)) <= 130:
            raise ProfileEditError(f"age must be a number of years from 0 to 130, got '{raw.strip()}'")
        return Fact(float(m.group(1)), 0, "edit")
    if name == "sex":
        value = {"f": "female", "woman": "female", "女": "female", "m": "male", "man": "male", "男": "male"}.get(text, text)
        if value not in SEXES:
            raise ProfileEditError(f"sex must be one of {', '.join(SEXES)}, got '{raw.strip()}'")
        return Fact(value, 0, "edit")
    m = re.fullmatch(r"(?:yes\s*,?\s*)?(\d{1,2})\s*(?:weeks?|w|周)", text)
    if m and 0 < int(m.group(1)) <= 45:
        return Fact(True, 0, "edit", f"{int(m.group(1))} weeks")
    if text in ("yes", "y", "true", "是"):
        return Fact(True, 0, "edit")
    if text in ("no", "n", "false", "否", "不是"):
        return Fact(False, 0, "edit")
    raise ProfileEditError(f"pregnant must be yes, no or a number of weeks (e.g. '34 weeks'), got '{raw.strip()}'")


def apply_edit(profile: Profile, command: str) -> str:
    """Apply one edit command to ``profile`` (in place); returns a one-line description of the change.

    ``set allergies penicillin, sulfa`` replaces the list, ``add`` appends, ``remove allergies
    penicillin`` drops one value, ``clear allergies`` / ``clear all`` empties. Errors name the problem."""
    words = command.strip().split(None, 2)
    if not words:
        raise ProfileEditError("empty profile edit; " + EDIT_HELP)
    verb = words[0].lower()
    if verb not in ("set", "add", "remove", "clear"):
        raise ProfileEditError(f"unknown profile edit '{words[0]}'; " + EDIT_HELP)
    if verb == "clear" and len(words) >= 2 and words[1].lower() == "all":
        profile.__init__()  # type: ignore[misc]
        return "cleared the whole profile"
    if len(words) < 2:
        raise ProfileEditError(f"'{verb}' needs a field; " + EDIT_HELP)
    name = _field(words[1])
    raw = words[2].strip() if len(words) > 2 else ""
    if verb == "clear":
        if name in LIST_FIELDS:
            setattr(profile, name, [])
            if name == "allergies":
                profile.no_known_allergies = None
        else:
            setattr(profile, name, None)
        return f"cleared {name}"
    if not raw:
        raise ProfileEditError(f"'{verb} {name}' needs a value; " + EDIT_HELP)
    if name in SINGLE_FIELDS:
        if verb == "remove":
            current = getattr(profile, name)
            if current is None:
                raise ProfileEditError(f"{name} is not set, nothing to remove")
            setattr(profile, name, None)
            return f"removed {name}"
        if verb == "add":
            raise ProfileEditError(f"{name} holds one value: use 'set {name} {raw}'")
        fact = _single_value(name, raw)
        setattr(profile, name, fact)
        if name == "pregnant" and fact.value and profile.sex is None:
            profile.sex = Fact("female", 0, "edit")
        return f"set {name} to {raw}"
    values = [v.strip() for v in re.split(r"[,，、;；]", raw) if v.strip()]
    if verb == "remove":
        missing = [v for v in values if not profile._remove(name, v)]
        if missing:
            have = ", ".join(profile.values(name)) or "nothing"
            raise ProfileEditError(f"{name} has no '{missing[0]}' (it holds: {have})")
        return f"removed {', '.join(values)} from {name}"
    if name == "allergies" and any(v.lower() in ("none", "no", "nka", "nkda", "无") for v in values):
        if verb == "add" or len(values) > 1:
            raise ProfileEditError("'none' cannot be listed with allergies: use 'set allergies none' alone")
        profile.allergies, profile.no_known_allergies = [], Fact(True, 0, "edit")
        return "set allergies to none known"
    if verb == "set":
        setattr(profile, name, [])
    for value in values:
        profile._add(name, value, 0, "edit")
    return f"{'set' if verb == 'set' else 'added'} {name}: {', '.join(values)}"
