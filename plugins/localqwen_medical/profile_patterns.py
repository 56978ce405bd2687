"""Rule-based extraction of patient facts from one chat turn (Chinese and English).

The cold start and the fallback of the profile extractor: no model needed. It reads only what the
person says about themselves (first person, or the child a parent asks about); sentences about
relatives are skipped. Allergens, drugs and conditions are recognised through small curated word
lists plus drug-name endings, so "皮肤过敏" (a skin reaction) or "I'm on vacation" give nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# -- words ---------------------------------------------------------------------------------------
# Canonical names, so "青霉素", "盘尼西林" and "Penicillin" are one fact (and the evaluation can
# compare values said in either language).
ALIASES: dict[str, str] = {
    "青霉素": "penicillin", "青霉素类": "penicillin", "盘尼西林": "penicillin", "penicillins": "penicillin",
    "阿莫西林": "amoxicillin", "氨苄西林": "ampicillin", "头孢": "cephalosporin", "头孢类": "cephalosporin",
    "头孢菌素": "cephalosporin", "cephalosporins": "cephalosporin", "磺胺": "sulfonamide", "磺胺类": "sulfonamide",
    "sulfa": "sulfonamide", "sulfa drugs": "sulfonamide", "sulfonamides": "sulfonamide", "阿司匹林": "aspirin",
    "布洛芬": "ibuprofen", "链霉素": "streptomycin", "庆大霉素": "gentamicin", "红霉素": "erythromycin",
    "可待因": "codeine", "吗啡": "morphine", "碘": "iodine", "造影剂": "contrast dye", "乳胶": "latex",
    "利多卡因": "lidocaine", "鸡蛋": "egg", "鸡蛋黄": "egg", "蛋黄": "egg", "蛋清": "egg", "eggs": "egg",
    "牛奶": "milk", "花生": "peanut", "peanuts": "peanut", "坚果": "tree nut", "tree nuts": "tree nut",
    "海鲜": "seafood", "鱼": "fish", "虾": "shrimp", "蟹": "crab", "螃蟹": "crab", "芒果": "mango",
    "花粉": "pollen", "尘螨": "dust mite", "螨虫": "dust mite", "dust mites": "dust mite", "猫毛": "cat dander",
    "cats": "cat dander", "shellfish": "shellfish", "贝类": "shellfish", "蚕豆": "fava bean", "fava beans": "fava bean",
    "小麦": "wheat", "大豆": "soy", "芝麻": "sesame", "bee stings": "bee sting", "酒精": "alcohol",
    "nsaids": "nsaid", "非甾体抗炎药": "nsaid",
    "二甲双胍": "metformin", "华法林": "warfarin", "氨氯地平": "amlodipine", "优甲乐": "levothyroxine",
    "左甲状腺素": "levothyroxine", "对乙酰氨基酚": "acetaminophen", "扑热息痛": "acetaminophen",
    "paracetamol": "acetaminophen", "tylenol": "acetaminophen", "辛伐他汀": "simvastatin",
    "阿托伐他汀": "atorvastatin", "赖诺普利": "lisinopril", "氯沙坦": "losartan", "氯吡格雷": "clopidogrel",
    "胰岛素": "insulin", "奥美拉唑": "omeprazole", "硝苯地平": "nifedipine", "美托洛尔": "metoprolol",
    "地高辛": "digoxin", "胺碘酮": "amiodarone", "西地那非": "sildenafil", "硝酸甘油": "nitroglycerin",
    "克拉霉素": "clarithromycin", "氟西汀": "fluoxetine", "舍曲林": "sertraline", "锂盐": "lithium",
    "碳酸锂": "lithium", "甲氨蝶呤": "methotrexate", "异维A酸": "isotretinoin", "泼尼松": "prednisone",
    "布地奈德": "budesonide", "沙丁胺醇": "salbutamol", "albuterol": "salbutamol", "螺内酯": "spironolactone",
    "氢氯噻嗪": "hydrochlorothiazide", "头孢克肟": "cefixime", "左氧氟沙星": "levofloxacin",
    "高血压": "hypertension", "high blood pressure": "hypertension", "糖尿病": "diabetes",
    "type 2 diabetes": "diabetes", "type 1 diabetes": "diabetes", "diabetic": "diabetes", "哮喘": "asthma",
    "asthmatic": "asthma", "冠心病": "coronary artery disease", "心力衰竭": "heart failure", "心衰": "heart failure",
    "房颤": "atrial fibrillation", "afib": "atrial fibrillation", "慢性肾病": "chronic kidney disease",
    "肾病": "kidney disease", "肾功能不全": "kidney disease", "肝硬化": "cirrhosis", "肝病": "liver disease",
    "癫痫": "epilepsy", "抑郁症": "depression", "甲减": "hypothyroidism", "甲状腺功能减退": "hypothyroidism",
    "甲亢": "hyperthyroidism", "痛风": "gout", "胃溃疡": "peptic ulcer", "消化性溃疡": "peptic ulcer",
    "胃炎": "gastritis", "慢性胃炎": "gastritis", "中风": "stroke", "脑卒中": "stroke", "乙肝": "hepatitis b",
    "偏头痛": "migraine", "骨质疏松": "osteoporosis", "高血脂": "hyperlipidemia", "高脂血症": "hyperlipidemia",
    "蚕豆病": "g6pd deficiency", "心脏病": "heart disease", "g6pd deficiency": "g6pd deficiency",
    "慢性阻塞性肺病": "copd", "慢阻肺": "copd",
}

ALLERGENS = [
    "青霉素类", "青霉素", "盘尼西林", "阿莫西林", "氨苄西林", "头孢菌素", "头孢类", "头孢", "磺胺类", "磺胺",
    "阿司匹林", "布洛芬", "链霉素", "庆大霉素", "红霉素", "可待因", "吗啡", "造影剂", "碘", "乳胶", "利多卡因",
    "鸡蛋黄", "鸡蛋", "蛋黄", "蛋清", "牛奶", "花生", "坚果", "海鲜", "鱼", "虾", "螃蟹", "蟹", "芒果", "花粉",
    "尘螨", "螨虫", "猫毛", "贝类", "蚕豆", "小麦", "大豆", "芝麻", "酒精", "非甾体抗炎药",
]
DRUGS = [
    "二甲双胍", "华法林", "氨氯地平", "优甲乐", "左甲状腺素", "对乙酰氨基酚", "扑热息痛", "辛伐他汀", "阿托伐他汀",
    "赖诺普利", "氯沙坦", "氯吡格雷", "胰岛素", "奥美拉唑", "硝苯地平", "美托洛尔", "地高辛", "胺碘酮", "西地那非",
    "硝酸甘油", "克拉霉素", "氟西汀", "舍曲林", "碳酸锂", "锂盐", "甲氨蝶呤", "异维A酸", "泼尼松", "布地奈德",
    "沙丁胺醇", "螺内酯", "氢氯噻嗪", "阿司匹林", "布洛芬", "阿莫西林", "头孢克肟", "左氧氟沙星", "青霉素",
]
CONDITIONS = [
    "高血压", "糖尿病", "哮喘", "冠心病", "心力衰竭", "心衰", "房颤", "慢性肾病", "肾功能不全", "肾病", "肝硬化",
    "肝病", "癫痫", "抑郁症", "甲状腺功能减退", "甲减", "甲亢", "痛风", "消化性溃疡", "胃溃疡", "慢性胃炎", "胃炎",
    "脑卒中", "中风", "乙肝", "偏头痛", "骨质疏松", "高脂血症", "高血脂", "蚕豆病", "心脏病", "慢性阻塞性肺病", "慢阻肺",
]
EN_CONDITIONS = [
    "type 2 diabetes", "type 1 diabetes", "diabetes", "high blood pressure", "hypertension", "asthma",
    "coronary artery disease", "heart failure", "atrial fibrillation", "afib", "chronic kidney disease",
    "kidney disease", "cirrhosis", "liver disease", "epilepsy", "depression", "hypothyroidism", "hyperthyroidism",
    "gout", "peptic ulcer", "gastritis", "stroke", "hepatitis b", "migraine", "migraines", "osteoporosis",
    "hyperlipidemia", "g6pd deficiency", "heart disease", "copd",
]
# Endings of drug names (generic names and Chinese dosage forms); "I'm on vacation" has none.
_EN_DRUG_END = re.compile(
    r"(?:cillin|mycin|cycline|floxacin|azole|pril|sartan|statin|formin|olol|dipine|prazole|oxetine|aline|"
    r"pam|lam|done|codone|morphine|ine|ide|ate|one|in|ol|an|en|il|ir|ix|mab|nib)$")
_ZH_DRUG_END = re.compile(r"(?:素|林|平|汀|胍|酮|片|胶囊|颗粒|丸|散|液|剂|酸|钠|钾|乐|唑|沙星|霉素|西林|普利|沙坦|洛尔|地平)$")
_EN_NOT_DRUGS = {"vacation", "holiday", "it", "that", "this", "them", "a walk", "a diet", "medication", "medicine",
                 "pills", "anything", "nothing", "something", "the pill", "my own", "duty", "call", "time",
                 "a break", "leave", "the way", "board", "line", "insulin pump"}

# Relatives whose facts are not the patient's (a child is taken as the patient: parents ask for them).
_EN_OTHERS = re.compile(r"\b(?:my|his|her|our) (?:mother|mom|mum|father|dad|wife|husband|sister|brother|friend|"
                        r"partner|grandmother|grandma|grandfather|grandpa|aunt|uncle|boss|neighbou?r|colleague)\b|"
                        r"\b(?:he|she|they) (?:is|are|has|have|takes|take|was)\b")
_ZH_OTHERS = re.compile(r"我?(?:妈妈|母亲|爸爸|父亲|老公|丈夫|妻子|老婆|朋友|姐姐|妹妹|哥哥|弟弟|奶奶|爷爷|外婆|外公|姥姥|"
                        r"姥爷|同事|邻居)")
_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass
class TurnFacts:
    """What one turn says: additions, retractions and single values (``None``: not mentioned)."""

    allergies: list[str] = field(default_factory=list)
    not_allergies: list[str] = field(default_factory=list)
    no_known_allergies: bool = False
    medications: list[str] = field(default_factory=list)
    stopped_medications: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    resolved_conditions: list[str] = field(default_factory=list)
    age: float | None = None
    sex: str | None = None
    pregnant: bool | None = None
    pregnancy_weeks: int | None = None

    def empty(self) -> bool:
        return self == TurnFacts()


def canonical(value: str) -> str:
    """The comparison key of a value: lower case, trimmed, plural/class words dropped, aliases joined."""
    text = re.sub(r"\s+", " ", value.strip().lower()).strip(" .,;:!?，。；：、\"'")
    text = re.sub(r"^(?:a|an|the|some|any)\s+", "", text)
    text = re.sub(r"(?:类药物|类药|药物|类抗生素|类)$", "", text) or text
    text = re.sub(r"\s+(?:drugs?|medicines?|medications?|antibiotics?|tablets?|pills?)$", "", text) or text
    if text in ALIASES:
        return ALIASES[text]
    if text.endswith("s") and text[:-1] in ALIASES:
        return ALIASES[text[:-1]]
    return text


# -- splitting -----------------------------------------------------------------------------------
def _sentences(text: str) -> list[str]:
    # A form field's value often sits on the line after its label ("过敏史：\n无"): join them first.
    text = re.sub(r"([：:])[ \t]*\n\s*", r"\1", text)
    return [s.strip() for s in re.split(r"(?<=[.!?。！？])\s*|\n", text) if s.strip()]


def _own_part(sentence: str) -> str:
    """The sentence without its clauses about other people ("my wife takes X", "我妈妈对X过敏")."""
    clauses = re.split(r"(?<=[,，])\s*", sentence)
    kept = [c for c in clauses if not (_EN_OTHERS.search(c.lower()) or _ZH_OTHERS.search(c))]
    return "".join(kept) if len(kept) != len(clauses) else sentence


def _items(span: str) -> list[str]:
    parts = re.split(r",|，|、|/|;|；|\band\b|\bor\b|\bas well as\b|和|及|以及|还有|或者?|跟", span)
    return [p.strip(" .:;!?，。：\"'") for p in parts if p.strip(" .:;!?，。：\"'")]


def _lexicon_hits(span: str, words: list[str]) -> list[str]:
    """Known words inside a Chinese span, longest first, without overlaps."""
    hits: list[tuple[int, str]] = []
    taken = [False] * len(span)
    for word in sorted(words, key=len, reverse=True):
        start = span.find(word)
        while start >= 0:
            if not any(taken[start:start + len(word)]):
                hits.append((start, word))
                for i in range(start, start + len(word)):
                    taken[i] = True
            start = span.find(word, start + 1)
    return [w for _, w in sorted(hits)]


# -- English -------------------------------------------------------------------------------------
_EN_CUT = re.compile(r"\s+(?:but|which|that|so|since|because|when|though|although|who|if|after|before|"
                     r"for|every|daily|twice|once|each|in the|at|as|from|until|to treat|per|last|yesterday|today|"
                     r"recently|now|ago|a day|a week|right now|anymore|any more)\b.*$")
_EN_DOSE = re.compile(r"\s*\d+(?:\.\d+)?\s*(?:mg|mcg|µg|g|ml|units?|iu|tablets?|pills?)\b.*$")


def _en_values(span: str) -> list[str]:
    values = []
    for item in _items(span.lower()):
        item = re.sub(r"^\s*\d+(?:\.\d+)?\s*(?:mg|mcg|µg|g|ml|units?|iu)\s+(?:of\s+)?", "", item)  # "81 mg aspirin"
        item = _EN_DOSE.sub("", _EN_CUT.sub("", " " + item)).strip()
        if re.match(r"(?:it|i|which|they|that|this|he|she)\b", item):  # ", it gives me hives": a new clause
            continue
        item = re.sub(r"^(?:(?:also|too|both|either|to|a|an|the|some|my|taking|on)\s+)+", "", item).strip()
        item = re.sub(r"\s+(?:too|also|as well)$", "", item).strip()
        if item and len(item.split()) <= 4 and item not in {"it", "that", "them", "this", "anything", "nothing"}:
            values.append(item)
    return values


def _en_drug(item: str) -> bool:
    """A medication name: a known one, or a word that ends like a drug (metformin, lisinopril)."""
    if item in _EN_NOT_DRUGS:
        return False
    if canonical(item) in ALIASES.values() or item in ALIASES:
        return True
    head = item.split()[0] if item.split() else ""
    return bool(_EN_DRUG_END.search(head)) and len(head) > 4


_EN_NOT_ALLERGENS = {"any", "none", "no", "seasonal", "food", "drug", "some", "many", "bad", "severe", "mild",
                     "multiple", "several", "known", "other"}
_EN_NKA = re.compile(r"\b(?:no known (?:drug |food )?allergies|nkda|nka|no allergies|not allergic to anything|"
                     r"(?:don't|do not|dont) have any (?:known )?allergies|i have no (?:known )?allergies|"
                     r"no (?:drug |food )?allergies)\b")
_EN_NOT_ALLERGIC = re.compile(r"\b(?:i'?m|i am|i was|i'm actually|i am actually)\s+(?:actually\s+)?not\s+(?:actually\s+)?"
                              r"allergic to\s+([^.;!?\n]+)|\bno (?:allergy|allergies) to\s+([^.;!?\n]+)|"
                              r"\b(?:isn't|is not|wasn't|was not) (?:my|an) allergy\b")
_EN_ALLERGIC = re.compile(r"\b(?:allergic|allergy|allergies|hypersensitive|hypersensitivity) (?:to|:)\s*([^.;!?\n]+)|"
                          r"\ballergies\s*(?:are|include|:)\s*([^.;!?\n]+)|"
                          r"\bi have (?:an? |bad |severe |mild )?([a-z][a-z -]{1,30}?) allerg(?:y|ies)\b")
# "Penicillin gives me hives", "I get a rash from sulfa": an allergy told as a reaction.
_EN_REACTION = re.compile(r"\b([a-z][a-z -]{2,30}?) (?:makes|gives|gave|made) me (?:break out|a rash|hives|swell|itch)|"
                          r"\bi (?:get|got|break out in|broke out in) (?:a rash|hives|swelling|itchy)\w* "
                          r"(?:from|with|after|when i take) ([^.;!?\n]+)")
_EN_STOPPED = re.compile(r"\b(?:i\s+)?(?:stopped taking|stopped|quit taking|quit|discontinued|came off|no longer take|don't take|do not take|"
                         r"no longer taking|am no longer (?:taking|on)|'m no longer (?:taking|on)|"
                         r"am not (?:taking|on)|'m not (?:taking|on)|not taking)\s+([^.;!?\n]+)")
_EN_TAKING = re.compile(r"\b(?:i(?:'m| am)\s+(?:currently |also |still |now )?(?:taking|on)|"
                        r"i\s+(?:currently |also |still |now |regularly )?(?:take|use)|"
                        r"i(?:'ve| have) been (?:taking|on)|(?:currently|still|now) (?:on|taking)|my (?:medications?|meds|pills?) (?:is|are|include)|"
                        r"(?:medications?|meds)\s*:|(?:prescribed|started(?: taking)?|switched to)|i\s+(?:now\s+)?take)"
                        r"\s+([^.;!?\n]+)")
# "Can I take ibuprofen?" asks about a drug; it does not say the patient takes it.
_EN_ASKING = re.compile(r"\b(?:can|could|should|may|might|would|is it (?:ok|safe|fine) to|is it (?:ok|safe) if|"
                        r"safe to|okay to|ok to|whether to|if i)\s*$")
_EN_AGE = [
    re.compile(r"\b(?:i'?m|i am|i'm now|i just turned|i turned|i'll be)\s+(\d{1,3})(?:\s*(?:years?|yrs?)(?: old)?|\s*y/?o)?"
               r"(?=\s*(?:$|[,.;!?)]|and\b|but\b|now\b|this\b))"),
    re.compile(r"\b(?:i'?m|i am)\s+(?:an?\s+)?(\d{1,3})[- ](?:year|yr)s?[- ]old\b"),
    re.compile(r"\b(?:my age is|age:?|aged)\s+(\d{1,3})\b"),
    re.compile(r"\b(?:i'?m|i am)\s+(?:an?\s+)?(\d{1,3})\s*(?:yo|y/o|y\.o\.)(?=\W|$)"),
    re.compile(r"\b(?:i'?m|i am)\s+(\d{1,3})\s+(?:years?|yrs?)\b"),
]
_EN_SEX = re.compile(r"\b(?:i'?m|i am|as)\s+(?:an?\s+)?(?:\d{1,3}[- ](?:year|yr)s?[- ]old\s+|\d{1,3}\s*(?:yo|y/o)\s+)?"
                     r"(male|female|man|woman|guy|girl|boy|lady|gentleman|mother|father|mom|dad)\b|"
                     r"\b(?:sex|gender)\s*(?:is|:)\s*(male|female|m|f)\b")
_EN_SEX_WORDS = {"male": "male", "man": "male", "guy": "male", "boy": "male", "gentleman": "male", "father": "male",
                 "dad": "male", "m": "male", "female": "female", "woman": "female", "girl": "female",
                 "lady": "female", "mother": "female", "mom": "female", "f": "female"}
_EN_NOT_PREGNANT = re.compile(r"\b(?:not|n't|no longer|never been)\s+(?:currently\s+)?pregnant\b|"
                              r"\b(?:pregnant|pregnancy)\s*:\s*no\b|\bnot expecting\b")
_EN_WEEKS_PREGNANT = re.compile(r"\b(\d{1,2})\s*(?:weeks?|wks?)\s+(?:pregnant|along|into my pregnancy)\b")
_EN_PREGNANT = re.compile(r"\b(?:i'?m|i am|i'm currently|i am currently|found out i'm|found out i am|i just found out i'm)"
                          r"\s+(?:now\s+|currently\s+|also\s+)?(?:pregnant|expecting)\b|\bpregnancy\s*:\s*yes\b|"
                          r"\bi'm in my (?:first|second|third) trimester\b")
_EN_CONDITION_CUE = re.compile(r"\b(?:have|had|got|suffer from|diagnosed with|history of|i'm|i am|with|"
                               r"conditions?\s*:)\b")
_EN_CONDITION_NEG = re.compile(r"\b(?:(?:i )?(?:don't|do not|dont) have|no history of|not|never had|no)\s+(?:any\s+)?"
                               r"([a-z0-9 ]{3,30})")


def _english(sentence: str, facts: TurnFacts) -> None:
    low = sentence.lower().replace("’", "'")
    if _EN_NKA.search(low):
        facts.no_known_allergies = True
    negated_spans = []
    for m in _EN_NOT_ALLERGIC.finditer(low):
        group = 1 if m.group(1) else 2 if m.group(2) else 0
        span, end = (m.group(group), m.end(group)) if group else ("", m.end())
        # "not allergic to penicillin, it was amoxicillin": the correction after the comma is positive,
        # and a new clause ("..., I'm allergic to codeine") is read on its own.
        fix = re.search(r"(?:,\s*|\s+)(?:but\s+)?(?:it\s+(?:was|is)|it's|only|just)\s+(?:actually\s+)?(.+)$", span)
        if fix:
            facts.allergies += [v for v in _en_values(fix.group(1)) if v not in _EN_NOT_ALLERGENS]
            span, end = span[:fix.start()], m.start(group) + fix.start()
        clause = re.search(r",\s*(?:and\s+)?(?:i|i'm|i am|my)\b|\s+but\b", span)
        if clause:
            span, end = span[:clause.start()], m.start(group) + clause.start()
        facts.not_allergies += _en_values(span)
        negated_spans.append((m.start(), end))
    pos = 0
    while (m := _EN_ALLERGIC.search(low, pos)) is not None:
        inside = [b for a, b in negated_spans if a <= m.start() < b]
        pos = max(inside) if inside else m.end()
        if inside:  # read on after the negated part ("not allergic to X, I'm allergic to Y")
            continue
        span = m.group(1) or m.group(2) or m.group(3) or ""
        if re.match(r"\s*(?:anything|nothing)\b", span) or "no " in low[max(0, m.start() - 4):m.start()]:
            continue
        for item in _en_values(span):
            if item.startswith("not "):
                facts.not_allergies.append(item[4:])
            elif item not in _EN_NOT_ALLERGENS:
                facts.allergies.append(item)
    for m in _EN_REACTION.finditer(low):
        facts.allergies += [v for v in _en_values(m.group(1) or m.group(2))
                            if (_en_drug(v) or canonical(v) in ALIASES.values()) and v not in facts.allergies]
    stopped_spans = []
    for m in _EN_STOPPED.finditer(low):
        facts.stopped_medications += [v for v in _en_values(m.group(1)) if _en_drug(v)]
        stopped_spans.append(m.span())
    for m in _EN_TAKING.finditer(low):
        if any(a <= m.start() < b for a, b in stopped_spans) or _EN_ASKING.search(low[max(0, m.start() - 14):m.start()]):
            continue
        for item in _en_values(m.group(1)):
            if item.startswith("not "):  # "I take lisinopril, not losartan" corrects an earlier turn
                if _en_drug(item[4:]):
                    facts.stopped_medications.append(item[4:])
            elif _en_drug(item):
                facts.medications.append(item)
    for pattern in _EN_AGE:
        m = pattern.search(low)
        if m and 0 <= int(m.group(1)) <= 120:
            facts.age = float(m.group(1))
            break
    m = _EN_SEX.search(low)
    if m:
        facts.sex = _EN_SEX_WORDS[m.group(1) or m.group(2)]
    if _EN_NOT_PREGNANT.search(low):
        facts.pregnant = False
    else:
        weeks = _EN_WEEKS_PREGNANT.search(low)
        if weeks:
            facts.pregnant, facts.pregnancy_weeks = True, int(weeks.group(1))
        elif _EN_PREGNANT.search(low):
            facts.pregnant = True
    if _EN_CONDITION_CUE.search(low) or re.search(r"\b(?:diabetic|asthmatic)\b", low):
        negated = {canonical(w) for m in _EN_CONDITION_NEG.finditer(low) for w in EN_CONDITIONS
                   if m.group(1).startswith(w)}
        for word in _en_lexicon(low, EN_CONDITIONS + ["diabetic", "asthmatic"]):
            (facts.resolved_conditions if canonical(word) in negated else facts.conditions).append(word)


def _en_lexicon(text: str, words: list[str]) -> list[str]:
    found: list[str] = []
    for word in sorted(words, key=len, reverse=True):
        if re.search(rf"\b{re.escape(word)}\b", text) and not any(word in f for f in found):
            found.append(word)
    return found


# -- Chinese -------------------------------------------------------------------------------------
_ZH_NKA = re.compile(r"(?:无|没有|否认)(?:任何|什么|明确的?|已知的?)?(?:药物|食物|药物及食物)?过敏(?:史)?|过敏史[：:]\s*(?:无|否认|没有|暂无)|"
                     r"(?:对)?什么都不过敏|(?:从来)?没(?:有)?(?:对什么)?过敏过")
_ZH_NOT_ALLERGIC = re.compile(r"对([^，。；！？\n,]{1,12}?)(?:并|其实|也)?(?:不|没有?)过敏")
_ZH_RESOLVED = re.compile(r"(?:以前|过去|小时候|曾经)([^，。；！？\n]{1,10}?)过敏[^。！？\n]*(?:不再过敏|不过敏了|已经不过敏|好了)")
_ZH_ALLERGIC = re.compile(r"([^，。；！？\n,:：]{1,14}?)(?:类药物|类药|类)?(?:都|也|会|有点|有些)?过敏(?!性|史)")
_ZH_HISTORY_FIELD = re.compile(r"过敏史[：:]\s*\n?\s*([^\n（(]+)")
# "停了X" and "X停了/不吃了": two patterns, so the leftmost match of one does not hide the other.
_ZH_STOPPED = [re.compile(r"(?:停了|停用了?|已经停(?:了|掉)?|不再(?:吃|服用|用)|没有?再(?:吃|服用|用)|不吃)([^，。；！？\n,]{1,14})"),
               re.compile(r"([^，。；！？\n,]{1,10}?)(?:已经)?(?:停了|停掉了|不吃了)")]
_ZH_TAKING = re.compile(r"(?:正在|目前|现在|一直|长期|每天|平时|还|也|都)?在?(?:吃着?|服用着?|服着?|用着?|口服|注射)"
                        r"([^，。；！？\n,]{1,20})|用药(?:情况)?[：:]\s*\n?\s*([^\n]+)")
_ZH_ASKING = re.compile(r"能不能|可不可以|可以|能否|是否|能|该不该|要不要|会不会")
_ZH_CONDITION_CUE = re.compile(r"有|患|得了|得过|确诊|诊断|病史|既往|慢性疾病|基础病")
_ZH_CONDITION_NEG = re.compile(r"(?:没有|无|否认|不是|排除)")
_ZH_AGE = [
    re.compile(r"(?:我|本人|患者|孩子|宝宝|儿子|女儿|小孩)(?:今年|现在|现年|已经)?(?:才|刚)?(\d{1,3})(?:周)?岁"),
    re.compile(r"(?:^|[，,\s]|今年|年龄[：:]\s*)(\d{1,3})(?:周)?岁"),
    re.compile(r"(?:我|孩子|宝宝)(?:今年|现在)?(\d{1,2})个月(?:大)?"),
]
_ZH_CN_NUMBERS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_ZH_SEX = re.compile(r"(?:性别[：:]\s*|我是(?:一[名个位])?|本人|^|[，,\s])(男|女)(?:性|生|士|的)?(?=[，,。\s\d]|$)|"
                     r"(?:孩子|宝宝)是(男|女)(?:孩|宝)")
_ZH_NOT_PREGNANT = re.compile(r"(?:未|没有?|并没有|不是|不在|并未)怀孕|怀孕情况[：:]\s*\n?\s*(?:无|否|未)|不是孕妇")
_ZH_WEEKS = re.compile(r"(?:怀孕|孕)(\d{1,2}|[一二两三四五六七八九十]+)(?:周|个?星期)|(\d{1,2})周(?:的)?身孕")
_ZH_MONTHS = re.compile(r"怀孕(\d{1,2}|[一二两三四五六七八九十]+)个(?:多)?月")
_ZH_PREGNANT = re.compile(r"(?:我|本人)?(?:怀孕了|已经怀孕|正在怀孕|怀孕中|是孕妇|有身孕|怀着孕|现在怀孕|孕期|孕早期|孕中期|孕晚期|"
                          r"怀孕情况[：:]\s*\n?\s*(?:已怀孕|怀孕))")
_ZH_ALLERGY_PREFIX = re.compile(r"^(?:.*?(?:对于|对|曾经出现过|出现过|曾打|曾用|曾吃|曾经|曾|以前|打了?|吃了?|用了?|有|是))")


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + _ZH_CN_NUMBERS.get(text[1:], 0) if len(text) > 1 else 10
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _ZH_CN_NUMBERS.get(tens, 1) * 10 + _ZH_CN_NUMBERS.get(ones, 0)
    return _ZH_CN_NUMBERS.get(text, 0)


def _zh_allergens(span: str) -> list[str]:
    """Allergens in the words before 过敏: known ones, else one drug-like name; never body parts."""
    hits = _lexicon_hits(span, ALLERGENS)
    if hits:
        return hits
    name = _ZH_ALLERGY_PREFIX.sub("", span).strip()
    name = re.sub(r"(?:类药物|类药|类|药物)$", "", name)
    if 2 <= len(name) <= 8 and _ZH_DRUG_END.search(name) and _CJK.search(name):
        return [name]
    return []


def _zh_drugs(span: str) -> list[str]:
    span = re.split(r"每天|每日|一天|一日|一次|早晚|早上|晚上|饭前|饭后|\d|[（(]|左右|治疗|控制", span)[0]
    found = _lexicon_hits(span, DRUGS)
    for item in _items(span):
        if item not in found and 2 <= len(item) <= 10 and _ZH_DRUG_END.search(item) and not _lexicon_hits(item, DRUGS):
            found.append(item)
    return found


def _chinese(sentence: str, facts: TurnFacts) -> None:
    if _ZH_NKA.search(sentence):
        facts.no_known_allergies = True
    for m in _ZH_RESOLVED.finditer(sentence):
        facts.not_allergies += _zh_allergens(m.group(1))
    sentence_wo_resolved = _ZH_RESOLVED.sub("", sentence)
    for m in _ZH_NOT_ALLERGIC.finditer(sentence_wo_resolved):
        facts.not_allergies += _zh_allergens(m.group(1))
    positive = _ZH_NOT_ALLERGIC.sub("", sentence_wo_resolved)
    positive = _ZH_NKA.sub("", positive)
    for m in _ZH_HISTORY_FIELD.finditer(positive):
        facts.allergies += _lexicon_hits(m.group(1), ALLERGENS)
    for m in _ZH_ALLERGIC.finditer(positive):
        if re.search(r"(?:不|没|无|否认|会不会|是不是|是否)$", m.group(1)):
            continue
        facts.allergies += [a for a in _zh_allergens(m.group(1)) if a not in facts.allergies]
    stopped_spans = []
    for pattern in _ZH_STOPPED:
        for m in pattern.finditer(sentence):
            facts.stopped_medications += [d for d in _zh_drugs(m.group(1)) if d not in facts.stopped_medications]
            stopped_spans.append(m.span())
    for m in _ZH_TAKING.finditer(sentence):
        span = m.group(1) or m.group(2)
        if any(a <= m.start() < b for a, b in stopped_spans) or "过敏" in span:  # "吃了青霉素过敏" is an allergy
            continue
        if _ZH_ASKING.search(sentence[max(0, m.start() - 6):m.start() + 1]):  # "能吃布洛芬吗" asks, does not take
            continue
        facts.medications += [d for d in _zh_drugs(span) if d not in facts.medications]
    if _ZH_CONDITION_CUE.search(sentence) or re.search(r"既往病史", sentence):
        for word in _lexicon_hits(sentence, CONDITIONS):
            before = sentence[:sentence.find(word)]
            clause = re.split(r"[，,；;。]", before)[-1]
            (facts.resolved_conditions if _ZH_CONDITION_NEG.search(clause) else facts.conditions).append(word)
    for i, pattern in enumerate(_ZH_AGE):
        m = pattern.search(sentence)
        if m:
            years = int(m.group(1))
            facts.age = round(years / 12, 2) if i == 2 else float(years)
            break
    m = _ZH_SEX.search(sentence)
    if m:
        facts.sex = "male" if (m.group(1) or m.group(2)) == "男" else "female"
    if _ZH_NOT_PREGNANT.search(sentence):
        facts.pregnant = False
    else:
        weeks, months = _ZH_WEEKS.search(sentence), _ZH_MONTHS.search(sentence)
        if weeks:
            facts.pregnant, facts.pregnancy_weeks = True, _zh_number(weeks.group(1) or weeks.group(2))
        elif months:
            facts.pregnant, facts.pregnancy_weeks = True, _zh_number(months.group(1)) * 4
        elif _ZH_PREGNANT.search(sentence):
            facts.pregnant = True


def extract_patterns(text: str) -> TurnFacts:
    """Facts one turn states about the patient, by rules (no model)."""
    facts = TurnFacts()
    for sentence in _sentences(text):
        own = _own_part(sentence)
        if not own.strip():
            continue
        if _CJK.search(own):
            _chinese(own, facts)
        if re.search(r"[A-Za-z]", own):
            _english(own, facts)
    if facts.pregnant and facts.sex is None:
        facts.sex = "female"
    return facts
