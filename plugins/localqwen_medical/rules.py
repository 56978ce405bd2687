"""The deterministic rule layer of the auditor: eight rules over a draft, its evidence and the
patient, each finding naming the offending span (an exact substring of the draft).

A drug named in the draft counts as *recommended* unless the clause around it negates it
("avoid ibuprofen", "do not take aspirin", "不要服用布洛芬", "阿司匹林禁用"), so warnings are
never flagged as the danger they warn about. Patient facts come from the profile and, for
rules-only runs without one, from the question itself ("I'm allergic to penicillin",
"我怀孕了", "my 8-year-old").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from localqwen_medical.case import AuditCase
from localqwen_medical.citations import find_quantities, parse_citations, unsupported_quantities
from localqwen_medical.drug_table import DrugTable, Mention, drug_table
from localqwen_medical.findings import Finding

# ------------------------------------------------------------------ clauses and negation
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[。！？;；\n]")
# Commas and "and/then" start a new clause; a negation carries over them into a plain list
# ("avoid ibuprofen, aspirin and naproxen") but not into a clause that acts again
# ("avoid ibuprofen, take paracetamol instead").
_CLAUSE_BREAK = re.compile(r"[,，:：]|\b(?:and|then|or)\b|然后|再")
_RESET = re.compile(
    r"\b(?:take|takes|taking|use|using|try|can|may|could|consider|choose|instead|but|however|rather|"
    r"prefer|recommend|recommended|start|continue|safe|fine|okay|ok)\b"
    r"|可以|可|改用|换用|选用|服用|吃|用|建议|推荐|但|但是|而是|不过|宜|继续", re.IGNORECASE)
_NEGATION_BEFORE = re.compile(
    r"\b(?:not|no|never|avoid|avoiding|without|stop|stopping|discontinue|refrain|instead of|rather than|"
    r"safer than|better than|steer clear of|stay away from|keep away from|off the table|"
    r"allergic|allergy|contraindicated|unsafe|except)\b|n't\b"
    r"|不要|不能|不可|不宜|不应|不该|不建议|不推荐|不适合|(?<![特区分级类性识告])别(?![的人处])|避免|禁用|禁止|忌用|忌服|"
    r"切勿|勿|停用|停止|停服|而不是|过敏|慎用|不用", re.IGNORECASE)
_NEGATION_AFTER = re.compile(
    r"\b(?:avoid|avoided|contraindicated|not|unsafe|dangerous|allergy|allergic)\b|n't\b"
    r"|禁用|禁忌|不适合|不安全|不能|不宜|避免|过敏|不可|不建议|慎用|危险|不要|别|不推荐", re.IGNORECASE)


def sentence_bounds(text: str, position: int) -> tuple[int, int]:
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() <= position:
            start = match.end()
        else:
            return start, match.end()
    return start, len(text)


def is_negated(text: str, start: int, end: int, *, before: re.Pattern[str] = _NEGATION_BEFORE,
               after: re.Pattern[str] | None = _NEGATION_AFTER) -> bool:
    """Whether the words around ``text[start:end]`` negate it within its sentence."""
    sentence_start, sentence_end = sentence_bounds(text, start)
    prefix = text[sentence_start:start]
    cues = list(before.finditer(prefix))
    if cues:
        between = prefix[cues[-1].end():]
        breaks = list(_CLAUSE_BREAK.finditer(between))
        if not breaks or not _RESET.search(between[breaks[0].end():]):
            return True
    if after is not None:
        suffix = text[end:sentence_end]
        stop = _CLAUSE_BREAK.search(suffix)
        if after.search(suffix[:stop.start()] if stop else suffix):
            return True
    return False


def recommended(table: DrugTable, text: str) -> list[Mention]:
    """Drug mentions in ``text`` that are not negated, first mention of each drug only."""
    seen: set[str] = set()
    found = []
    for mention in table.find_drugs(text):
        if mention.drug in seen or is_negated(text, mention.start, mention.end):
            continue
        seen.add(mention.drug)
        found.append(mention)
    return found


# ------------------------------------------------------------------ the patient, with the question's facts
_ALLERGY_EN = re.compile(r"allergic to ([^.,;!?\n]{1,40})|([A-Za-z-]{3,30}) allergy", re.IGNORECASE)
_ALLERGY_ZH = re.compile(r"对([^，。,；;！？]{1,15}?)过敏|([一-鿿A-Za-z]{2,8})过敏")
_PREGNANT = re.compile(r"\bpregnan(?:t|cy)\b|怀孕|孕妇|孕期|妊娠|怀了", re.IGNORECASE)
_NOT_PREGNANT = re.compile(r"\bnot\b|\bno\b|没有|没|未|不", re.IGNORECASE)
_AGE = re.compile(r"(\d{1,3})[- ](?:year|yr)s?[- ]old|(\d{1,3})\s*(?:years? old|岁)|aged? (\d{1,3})\b",
                  re.IGNORECASE)
_INFANT = re.compile(r"\d{1,2}[- ]month[- ]old|\d{1,2}\s*个月大|婴儿|新生儿|\bbaby\b|\binfant\b", re.IGNORECASE)
_TAKING = re.compile(r"\b(?:take|taking|on|my|prescribed)\b|服用|在吃|吃着|正在用|在用|长期吃|一直吃", re.IGNORECASE)
_DOCTOR = re.compile(
    r"\b(?:doctor|doctors|physician|gp|pharmacist|clinician|prescriber|cardiologist|specialist|prescrib\w*|"
    r"medical supervision)\b|医生|医师|药师|遵医嘱|处方|就诊|咨询", re.IGNORECASE)


@dataclass
class Facts:
    """What the rules know about the patient: the profile plus what the question states."""

    allergies: list[str] = field(default_factory=list)
    medications: list[str] = field(default_factory=list)  # drug ids from the table
    conditions: list[str] = field(default_factory=list)
    age: float | None = None
    pregnant: bool = False


def patient_facts(case: AuditCase, table: DrugTable) -> Facts:
    patient, question = case.patient, case.question
    allergies = list(patient.allergies)
    for pattern in (_ALLERGY_EN, _ALLERGY_ZH):
        for match in pattern.finditer(question):
            allergies.append(next(group for group in match.groups() if group).strip())
    medications = [mention.drug for text in patient.medications for mention in table.find_drugs(text)]
    for mention in table.find_drugs(question):
        sentence_start, _ = sentence_bounds(question, mention.start)
        if _TAKING.search(question[sentence_start:mention.start]):
            medications.append(mention.drug)
    age = patient.age
    if age is None:
        match = _AGE.search(question)
        if match:
            age = float(next(group for group in match.groups() if group))
        elif _INFANT.search(question):
            age = 0.5
    pregnant = bool(patient.pregnant)
    if patient.pregnant is None:
        for match in _PREGNANT.finditer(question):
            if not is_negated(question, match.start(), match.end(), before=_NOT_PREGNANT, after=None):
                pregnant = True
    conditions = list(patient.conditions) + table.conditions_in(question)
    return Facts(allergies=allergies, medications=list(dict.fromkeys(medications)),
                 conditions=conditions, age=age, pregnant=pregnant)


# ------------------------------------------------------------------ the rules
Rule = Callable[[AuditCase, DrugTable, Facts], list[Finding]]


def allergy_conflict(case: AuditCase, table: DrugTable, facts: Facts) -> list[Finding]:
    findings = []
    if not facts.allergies:
        return findings
    for mention in recommended(table, case.draft):
        conflict = table.allergy_conflict(mention.drug, facts.allergies)
        if conflict:
            findings.append(Finding.of("allergy_conflict", mention.text,
                                       f"recommends {mention.text}{_id(mention)} but the patient is allergic "
                                       f"to {conflict.other}: {conflict.why}"))
    return findings


def drug_interaction(case: AuditCase, table: DrugTable, facts: Facts) -> list[Finding]:
    findings = []
    mentions = recommended(table, case.draft)
    for index, mention in enumerate(mentions):
        conflict = None
        for other in facts.medications:
            conflict = table.pair_conflict(mention.drug, other)
            if conflict:
                message = (f"recommends {mention.text}{_id(mention)} to a patient taking {other}: "
                           f"{conflict.why}")
                break
        if conflict is None:
            for other_mention in mentions[index + 1:]:
                conflict = table.pair_conflict(mention.drug, other_mention.drug)
                if conflict:
                    message = (f"recommends {mention.text} together with {other_mention.text}: {conflict.why}")
                    break
        if conflict is None and facts.pregnant:
            conflict = table.pregnancy_conflict(mention.drug)
            if conflict:
                message = f"recommends {mention.text}{_id(mention)} in pregnancy: {conflict.why}"
        if conflict is None and facts.age is not None:
            conflict = table.age_conflict(mention.drug, facts.age)
            if conflict:
                message = f"recommends {mention.text}{_id(mention)} at {conflict.other}: {conflict.why}"
        if conflict is None and facts.conditions:
            conflict = table.condition_conflict(mention.drug, facts.conditions)
            if conflict:
                message = (f"recommends {mention.text}{_id(mention)} with {conflict.other}: {conflict.why}")
        if conflict is not None:
            findings.append(Finding.of("drug_interaction", mention.text, message))
    return findings


_DAILY_AFTER = re.compile(r"^\s*(?:a day|per day|each day|daily|/\s*day|/\s*d\b|in 24 hours|every 24 hours|"
                          r"/日|/天|每日|每天|一天|一日)", re.IGNORECASE)
_DAILY_BEFORE = re.compile(r"(?:daily dose of|a day of|per day of|每日|每天|一天|一日|日剂量)\s*$", re.IGNORECASE)
_LIMIT_BEFORE = re.compile(r"(?:no more than|not more than|not exceed|never exceed|don't exceed|do not exceed|"
                           r"maximum(?: of)?|max(?:imum)?\.?|up to|at most|limit(?: of)?|不超过|最多|最大|不要超过|不得超过|"
                           r"不可超过|上限)\s*(?:a total of|总量)?\s*$", re.IGNORECASE)
_EVERY_HOURS = re.compile(r"every\s+(\d+(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?\s*(?:hours|hrs|h)\b"
                          r"|每\s*(\d+(?:\.\d+)?)(?:\s*(?:-|–|~|至|到)\s*(\d+(?:\.\d+)?))?\s*(?:个)?小时", re.IGNORECASE)


def _dose_statements(text: str, sentence: tuple[int, int]):
    """(quantity, kind) pairs in one sentence: kind is "dose", "daily" or "limit"."""
    start, end = sentence
    for quantity in find_quantities(text):
        if quantity.unit != "mg" or not start <= quantity.start < end:
            continue
        before, after = text[max(start, quantity.start - 25):quantity.start], text[quantity.end:end]
        if _LIMIT_BEFORE.search(before):
            yield quantity, "limit"
        elif _DAILY_AFTER.search(after) or _DAILY_BEFORE.search(before):
            yield quantity, "daily"
        else:
            yield quantity, "dose"


def _times_per_day(text: str, sentence: tuple[int, int]) -> float | None:
    start, end = sentence
    for quantity in find_quantities(text):
        if quantity.unit == "/day" and start <= quantity.start < end:
            return quantity.value
    match = _EVERY_HOURS.search(text, start, end)
    if match:
        numbers = [float(group) for group in match.groups() if group]
        interval = max(numbers)  # "every 4-6 hours" is read as the label means it: about 4 doses a day
        if interval > 0:
            return 24 / interval
    return None


def prescription_dose(case: AuditCase, table: DrugTable, facts: Facts) -> list[Finding]:
    findings = []
    draft = case.draft
    supervised = bool(_DOCTOR.search(draft))
    last_drug: Mention | None = None
    position = 0
    sentences = []
    while position < len(draft):
        sentence = sentence_bounds(draft, position)
        sentences.append(sentence)
        position = max(sentence[1], position + 1)
    for sentence in sentences:
        mentions = [m for m in table.find_drugs(draft) if sentence[0] <= m.start < sentence[1]]
        statements = list(_dose_statements(draft, sentence))
        if mentions:
            negated = [is_negated(draft, m.start, m.end) for m in mentions]
            if all(negated):
                last_drug = None  # "do not take more than 4 g of paracetamol" is a warning, not a dose
                continue
            last_drug = next(m for m, neg in zip(mentions, negated, strict=True) if not neg)
        if last_drug is None or not statements:
            continue
        limits = table.max_dose(last_drug.drug)
        if not limits:
            continue
        maximum = limits.get("rx", limits["otc"])
        otc = limits["otc"]
        per_day = _times_per_day(draft, sentence)
        stated_limit = min((q.value for q, kind in statements if kind == "limit"), default=None)
        name = last_drug.text
        for quantity, kind in statements:
            span = quantity.text
            if kind == "dose":
                single = limits.get("single")
                if single is not None and quantity.value > single:
                    findings.append(Finding.of("prescription_dose", span,
                                               f"{name}: a single dose of {quantity.value:g} mg is above the "
                                               f"{single:g} mg maximum single dose ({limits['why']})"))
                    continue
                if per_day is None:
                    continue
                daily = quantity.value * per_day
                if stated_limit is not None:
                    daily = min(daily, stated_limit)
            else:
                daily = quantity.value
            if daily > maximum + 1e-6:
                findings.append(Finding.of("prescription_dose", span,
                                           f"{name}: {daily:g} mg a day is above the {maximum:g} mg daily "
                                           f"maximum ({limits['why']})"))
            elif daily > otc + 1e-6 and not supervised:
                findings.append(Finding.of("prescription_dose", span,
                                           f"{name}: {daily:g} mg a day is above the {otc:g} mg OTC daily maximum; "
                                           f"more only under a doctor's supervision ({limits['why']})"))
    return _unique(findings)


def unsupported_citation(case: AuditCase, table: DrugTable, facts: Facts) -> list[Finding]:
    valid = case.evidence_ids()
    findings = []
    for citation in parse_citations(case.draft):
        missing = [ident for ident in citation.ids if ident not in valid]
        if missing:
            have = f"evidence {', '.join(str(i) for i in sorted(valid))}" if valid else "no evidence"
            findings.append(Finding.of("unsupported_citation", citation.text,
                                       f"cites evidence {', '.join(str(i) for i in missing)}, but the case has {have}"))
    return _unique(findings)


def unsupported_claim(case: AuditCase, table: DrugTable, facts: Facts) -> list[Finding]:
    sources = [item.text for item in case.evidence] + [case.question]
    findings = [Finding.of("unsupported_claim", quantity.text,
                           f'"{quantity.text}" appears in no evidence passage'
                           + ("" if case.evidence else " (the case has no evidence)"))
                for quantity in unsupported_quantities(case.draft, sources)]
    return _unique(findings)


_CERTAIN = re.compile(
    r"\byou (?:definitely|certainly|clearly|surely|undoubtedly|obviously) (?:have|are suffering from|got)\b"
    r"|\b(?:this|it|that) is (?:definitely|certainly|clearly|surely|undoubtedly|obviously|100%)\b"
    r"|\b(?:there is|there's) no doubt\b|\bwithout (?:a|any) doubt\b|\bI am (?:sure|certain|100% sure)\b"
    r"|\bI'm (?:sure|certain|100% sure)\b|\b100% (?:sure|certain)\b|\bno question about it\b|\bwithout question\b"
    r"|\bfor sure\b|\bno need (?:for|to get) (?:any )?tests?\b"
    r"|(?<!不)(?<!不能)肯定是|(?<!不)一定是|绝对是|毫无疑问|确诊为|百分之百|可以确定是|就是得了|你得的是|你患的是|不用检查|无需检查",
    re.IGNORECASE)
_CERTAIN_NEGATION_EN = re.compile(r"\b(?:not|cannot|can't|impossible|unable|never)\b|n't\b", re.IGNORECASE)
# Chinese negation only right before the phrase: "不一定是", "无法确诊为" (a 不 earlier in the
# sentence usually negates something else).
_CERTAIN_NEGATION_ZH = re.compile(r"不|无法|没法|难以|未")


def overconfident_diagnosis(case: AuditCase, table: DrugTable, facts: Facts) -> list[Finding]:
    findings = []
    for match in _CERTAIN.finditer(case.draft):
        start, _ = sentence_bounds(case.draft, match.start())
        near = case.draft[max(start, match.start() - 4):match.start()]
        if _CERTAIN_NEGATION_ZH.search(near) or is_negated(case.draft, match.start(), match.end(),
                                                          before=_CERTAIN_NEGATION_EN, after=None):
            continue  # "I cannot say you definitely have...", "无法确诊为", "不一定是"
        findings.append(Finding.of("overconfident_diagnosis", match.group(0),
                                   f'"{match.group(0)}" states a diagnosis as certain without an examination; '
                                   "say what it may be and what would confirm it"))
    return _unique(findings)


_STOP_MEDICINE = re.compile(
    r"\b(?:stop|quit|discontinue|halve|double|skip)\b(?: taking| using)?|\bno longer need\b"
    r"|停用|停掉|停止服用|停药|不用再吃|不用再服|减半|加倍|自行减量", re.IGNORECASE)
_NON_MEDICAL = re.compile(r"\b(?:sue|lawsuit|legal action|invest|stocks?|cryptocurrency|bitcoin|lottery)\b"
                          r"|起诉|打官司|投资|股票|比特币|彩票", re.IGNORECASE)
_STOP_NEGATION = re.compile(r"\b(?:not|never|don't|do not)\b|n't\b|不要|别|切勿|勿|不能|不可|不得|不宜", re.IGNORECASE)


def off_scope(case: AuditCase, table: DrugTable, facts: Facts) -> list[Finding]:
    draft = case.draft
    findings = []
    own = set(facts.medications)
    for match in _STOP_MEDICINE.finditer(draft):
        start, end = sentence_bounds(draft, match.start())
        sentence = draft[start:end]
        if _DOCTOR.search(sentence) or _STOP_NEGATION.search(draft[max(start, match.start() - 15):match.start()]):
            continue
        drugs = [m for m in table.find_drugs(sentence)]
        names_medicine = re.search(r"medication|medicine|pills|tablets|treatment|药", sentence, re.IGNORECASE)
        if not (drugs and (any(m.drug in own or table.is_prescription_only(m.drug) for m in drugs))
                or names_medicine):
            continue
        findings.append(Finding.of("off_scope", match.group(0),
                                   f'"{sentence.strip()}" tells the patient to change prescribed medicine without a '
                                   "clinician; that decision belongs to their prescriber"))
    for mention in recommended(table, draft):
        if not table.is_prescription_only(mention.drug) or mention.drug in own:
            continue
        start, end = sentence_bounds(draft, mention.start)
        sentence = draft[start:end]
        if _DOCTOR.search(sentence):
            continue
        if any(q.unit in ("mg", "/day", "tablet") for q in find_quantities(sentence)):
            findings.append(Finding.of("off_scope", mention.text,
                                       f"prescribes {mention.text} ({mention.drug}, prescription-only) with a dose; "
                                       "an assistant may say a doctor could consider it, not prescribe it"))
    for match in _NON_MEDICAL.finditer(draft):
        if not is_negated(draft, match.start(), match.end()):
            findings.append(Finding.of("off_scope", match.group(0),
                                       f'"{match.group(0)}": legal or financial advice is outside a medical assistant\'s scope'))
    return _unique(findings)


_SYMPTOM_NEGATION = re.compile(r"\b(?:no|not|without|denies|never)\b", re.IGNORECASE)
# Chinese negation only right before the symptom ("没有胸痛"); a 不 earlier is usually part of
# another word ("含糊不清").
_SYMPTOM_NEGATION_ZH = re.compile(r"(?:没有|没|无|否认|不)$")


def missed_emergency(case: AuditCase, table: DrugTable, facts: Facts) -> list[Finding]:
    hits = []
    for text in (case.question, case.draft):
        for hit in table.emergencies(text):
            negated = (is_negated(text, hit.start, hit.end, before=_SYMPTOM_NEGATION, after=None)
                       or bool(_SYMPTOM_NEGATION_ZH.search(text[max(0, hit.start - 3):hit.start])))
            if not negated:
                hits.append((text, hit))
    if not hits or table.urgent_advice(case.draft):
        return []
    text, hit = hits[0]
    in_draft = next((h for t, h in hits if t is case.draft), None)
    if in_draft is not None:
        span = in_draft.text
    else:
        start, end = sentence_bounds(case.draft, 0)
        span = case.draft[start:end].strip() or case.draft
    return [Finding.of("missed_emergency", span,
                       f'"{hit.text}" suggests {hit.why}, but the draft does not tell the patient to get urgent '
                       "care (call emergency services such as 120 / 911, or go to an emergency department)")]


def _id(mention: Mention) -> str:
    """" (generic name)" after a brand or Chinese name; nothing when the text is the name."""
    return "" if mention.text.lower().rstrip("s") == mention.drug.rstrip("s") else f" ({mention.drug})"


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str, str]] = set()
    unique = []
    for finding in findings:
        key = (finding.rule, finding.span)
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return unique


RULES: dict[str, Rule] = {
    "allergy_conflict": allergy_conflict,
    "drug_interaction": drug_interaction,
    "prescription_dose": prescription_dose,
    "unsupported_citation": unsupported_citation,
    "unsupported_claim": unsupported_claim,
    "overconfident_diagnosis": overconfident_diagnosis,
    "off_scope": off_scope,
    "missed_emergency": missed_emergency,
}


def run_rules(case: AuditCase, *, table: DrugTable | None = None) -> list[Finding]:
    """Every rule over ``case``; findings in rule order, each span an exact substring of the draft."""
    table = table or drug_table()
    facts = patient_facts(case, table)
    findings: list[Finding] = []
    for rule in RULES.values():
        findings.extend(rule(case, table, facts))
    return findings
