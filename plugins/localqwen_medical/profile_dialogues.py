"""Synthetic patient dialogues (Chinese and English) with the profile they should leave behind.

Deterministic for a seed, so the profile suite's numbers can be compared between runs. Each
dialogue mixes the fact statements with what the extractor must not take: questions about a drug
("can I take ibuprofen?"), a relative's allergy or medication, retractions ("I'm not allergic to
X after all"), stopped medications, an age correction and small talk. The expected profile is
the state after the last turn.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

_WORDS = {
    "en": {
        "allergens": ["penicillin", "sulfa", "aspirin", "codeine", "latex", "peanuts", "ibuprofen", "amoxicillin",
                      "shellfish", "eggs", "cephalosporins", "iodine"],
        "drugs": ["metformin", "lisinopril", "warfarin", "atorvastatin", "levothyroxine", "amlodipine", "omeprazole",
                  "sertraline", "insulin", "metoprolol"],
        "conditions": ["diabetes", "hypertension", "asthma", "gout", "epilepsy", "heart failure", "hypothyroidism"],
    },
    "zh": {
        "allergens": ["青霉素", "磺胺", "阿司匹林", "头孢", "花生", "海鲜", "鸡蛋", "布洛芬", "芒果", "花粉", "牛奶"],
        "drugs": ["二甲双胍", "氨氯地平", "华法林", "阿托伐他汀", "优甲乐", "奥美拉唑", "胰岛素", "硝苯地平", "美托洛尔"],
        "conditions": ["糖尿病", "高血压", "哮喘", "痛风", "癫痫", "冠心病", "甲减"],
    },
}

_T = {
    "en": {
        "allergy": ["I'm allergic to {a}.", "I am allergic to {a}.", "Just so you know, I'm allergic to {a}.",
                    "I have a {a} allergy.", "Allergies: {a}.", "I'm severely allergic to {a}, it gives me hives."],
        "allergy2": ["I'm allergic to {a} and {b}.", "I am allergic to {a}, and also to {b}.", "My allergies are {a} and {b}."],
        "nka": ["No known allergies.", "I don't have any allergies.", "I have no allergies that I know of."],
        "retract": ["Sorry, I'm not allergic to {a} after all, I mixed it up.", "Actually I'm not allergic to {a}."],
        "med": ["I take {d} every morning.", "I'm currently taking {d}.", "I'm on {d} 20 mg daily.",
                "I've been taking {d} for two years.", "I take {d} and {e}."],
        "stop": ["I stopped taking {d} last month.", "I no longer take {d}."],
        "cond": ["I have {c}.", "I was diagnosed with {c} three years ago.", "I've got {c}.", "I have a history of {c}."],
        "age": ["I'm {n}.", "I am {n} years old.", "I'm a {n}-year-old {s}.", "I just turned {n}."],
        "age_fix": ["Sorry, I'm {n}, not {m}.", "Correction: I am {n} years old."],
        "sex": {"female": ["I'm a woman.", "I am female."], "male": ["I'm a man.", "I am male."]},
        "preg": ["I'm {w} weeks pregnant.", "I'm pregnant, about {w} weeks along.", "I am currently pregnant."],
        "not_preg": ["I'm not pregnant.", "I am not pregnant, if that matters."],
        "ask": ["Can I take {x} for the pain?", "Is it safe to take {x}?", "Should I take {x} tonight?"],
        "other": ["My mother is allergic to {x}.", "My husband takes {y} for his heart.", "My father has {z}."],
        "chat": ["I've had a headache since yesterday.", "The cough is worse at night.", "Thanks, that helps."],
        "sexword": {"female": "woman", "male": "man"},
    },
    "zh": {
        "allergy": ["我对{a}过敏。", "我{a}过敏。", "提醒一下，我对{a}过敏。", "本人对{a}过敏，吃了会起疹子。", "过敏史：{a}过敏。"],
        "allergy2": ["我对{a}和{b}过敏。", "我对{a}过敏，对{b}也过敏。", "{a}、{b}我都过敏。"],
        "nka": ["我没有过敏史。", "没有什么过敏。", "过敏史：无。"],
        "retract": ["不好意思，我对{a}不过敏，刚才说错了。", "其实我对{a}并不过敏。"],
        "med": ["我每天吃{d}。", "我正在服用{d}。", "我一直在吃{d}，每天一次。", "目前在用{d}。", "我长期服用{d}和{e}。"],
        "stop": ["我上个月停了{d}。", "{d}已经不吃了。"],
        "cond": ["我有{c}。", "我有{c}病史。", "三年前确诊了{c}。", "我患有{c}。"],
        "age": ["我今年{n}岁。", "我{n}岁了。", "{s}，{n}岁。"],
        "age_fix": ["说错了，我今年{n}岁。", "更正一下，我{n}岁。"],
        "sex": {"female": ["我是女的。", "性别：女。"], "male": ["我是男的。", "性别：男。"]},
        "preg": ["我怀孕{w}周了。", "现在孕{w}周。", "我怀孕了。"],
        "not_preg": ["我没有怀孕。", "未怀孕。"],
        "ask": ["我可以吃{x}吗？", "能不能吃{x}？", "{x}能吃吗？"],
        "other": ["我妈妈对{x}过敏。", "我爸爸在吃{y}。", "我老公有{z}。"],
        "chat": ["我从昨天开始头疼。", "晚上咳得更厉害。", "谢谢医生。"],
        "sexword": {"female": "女", "male": "男"},
    },
}


@dataclass
class Dialogue:
    id: str
    language: str
    turns: list[str]
    expected: dict[str, Any] = field(default_factory=dict)  # allergies/medications/conditions lists, age, sex, pregnant


def generate_dialogues(count: int = 200, seed: int = 0) -> list[Dialogue]:
    """``count`` dialogues, alternating English and Chinese."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    rng = random.Random(seed)
    return [_dialogue(rng, "en" if i % 2 == 0 else "zh", f"syn-{i:04d}") for i in range(count)]


def _dialogue(rng: random.Random, lang: str, ident: str) -> Dialogue:
    words, t = _WORDS[lang], _T[lang]
    turns: list[str] = []
    allergens = rng.sample(words["allergens"], rng.choice([0, 1, 1, 2, 2, 3]))
    drugs = rng.sample(words["drugs"], rng.choice([0, 1, 1, 2]))
    conditions = rng.sample(words["conditions"], rng.choice([0, 0, 1, 1, 2]))
    sex = rng.choice(["female", "male"])
    age = rng.randint(18, 85) if rng.random() < 0.8 else None
    pregnant: bool | None = None
    if sex == "female" and age is not None and age <= 44 and rng.random() < 0.5:
        pregnant = rng.random() < 0.7

    if age is not None:
        if rng.random() < 0.2:  # said wrong first, then corrected
            wrong = age + rng.choice([-3, -1, 1, 2])
            turns.append(rng.choice(t["age"][:2]).format(n=wrong))
            turns.append(rng.choice(t["age_fix"]).format(n=age, m=wrong))
        else:
            turns.append(rng.choice(t["age"]).format(n=age, s=t["sexword"][sex]))
    said_sex = age is not None and any(t["sexword"][sex] in turn for turn in turns)
    if not said_sex and rng.random() < 0.6:
        turns.append(rng.choice(t["sex"][sex]))
        said_sex = True
    if pregnant is True:
        said_sex = True
        turns.append(rng.choice(t["preg"]).format(w=rng.randint(6, 38)))
    elif pregnant is False:
        turns.append(rng.choice(t["not_preg"]))

    if not allergens:
        if rng.random() < 0.6:
            turns.append(rng.choice(t["nka"]))
    elif len(allergens) == 1:
        turns.append(rng.choice(t["allergy"]).format(a=allergens[0]))
    else:
        turns.append(rng.choice(t["allergy2"]).format(a=allergens[0], b=allergens[1]))
        for extra in allergens[2:]:
            turns.append(rng.choice(t["allergy"]).format(a=extra))
    retracted = [a for a in allergens if rng.random() < 0.15]
    for allergen in retracted:
        turns.append(rng.choice(t["retract"]).format(a=allergen))

    if len(drugs) == 2 and rng.random() < 0.5:
        turns.append(t["med"][-1].format(d=drugs[0], e=drugs[1]))
    else:
        turns += [rng.choice(t["med"][:-1]).format(d=d) for d in drugs]
    stopped = [d for d in drugs if rng.random() < 0.15]
    turns += [rng.choice(t["stop"]).format(d=d) for d in stopped]
    turns += [rng.choice(t["cond"]).format(c=c) for c in conditions]

    # Things that must not land in the profile.
    others = [w for w in words["allergens"] if w not in allergens]
    other_drugs = [w for w in words["drugs"] if w not in drugs]
    other_conditions = [w for w in words["conditions"] if w not in conditions]
    for _ in range(rng.randint(1, 2)):  # anywhere after the first turn
        kind = rng.choice(["ask", "other", "chat"])
        distractor = rng.choice(t[kind]).format(x=rng.choice(others + other_drugs), y=rng.choice(other_drugs),
                                                z=rng.choice(other_conditions))
        turns.insert(rng.randint(1, len(turns)), distractor)

    expected = {
        "allergies": [a for a in allergens if a not in retracted] or (["none"] if any(
            turn in t["nka"] for turn in turns) else []),
        "medications": [d for d in drugs if d not in stopped],
        "conditions": conditions,
        "age": age,
        "sex": sex if said_sex else None,
        "pregnant": pregnant,
    }
    return Dialogue(ident, lang, turns, expected)
