"""Made-up facts and general instruction rows for the consolidation proof and its tests.

Facts: unique people, each with one attribute ("Ana Berg's favourite colour is teal."), seeded and
reproducible; a second batch never reuses a name of the first. General rows: small instruction
tasks (sums, comparisons, capitals, repeating, greetings, and facts about people given in the
question: repeat one, answer from one) whose held-out loss shows whether consolidation hurt the
model's plain answers. Those in-context facts use a reserved pool of people that no fact batch
ever uses, so the tiny proof model learns to write a sentence about someone (a skill every real
model has) without ever seeing a fact it is later asked to recall.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FIRST_NAMES = (
    "Ana", "Ben", "Carla", "Dario", "Elif", "Femi", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Lars", "Mona",
    "Nils", "Olga", "Pablo", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Viktor", "Wanda", "Xavier", "Yara",
    "Zeno", "Aiko", "Bruno", "Chen", "Dina", "Emil", "Farah", "Gino", "Hana", "Ivo", "Jade", "Kofi", "Lina",
    "Marco", "Nora",
)
LAST_NAMES = (
    "Berg", "Costa", "Dahl", "Evans", "Fischer", "Garcia", "Hansen", "Ito", "Jensen", "Kowalski", "Laine",
    "Moreau", "Novak", "Okafor", "Petrov", "Quist", "Rossi", "Silva", "Tanaka", "Ueda", "Varga", "Weber",
    "Yilmaz", "Zhang", "Alvarez", "Brandt", "Conti", "Duval", "Eriksen", "Ferrari",
)
ATTRIBUTES = {
    "favourite colour": ("teal", "crimson", "amber", "violet", "olive", "navy", "coral", "ivory", "maroon", "lime"),
    "home city": ("Lyon", "Porto", "Kyoto", "Oslo", "Quito", "Dakar", "Perth", "Graz", "Cusco", "Tartu"),
    "pet": ("a parrot", "a beagle", "a tortoise", "a ferret", "a goldfish", "a husky", "a hamster", "a cockatoo"),
    "job": ("a baker", "a pilot", "a nurse", "a plumber", "a librarian", "a chemist", "a tailor", "a welder"),
    "favourite sport": ("rowing", "fencing", "curling", "cricket", "judo", "surfing", "handball", "archery"),
    "favourite food": ("ramen", "paella", "falafel", "lasagne", "dumplings", "risotto", "tacos", "goulash"),
    "instrument": ("the cello", "the oboe", "the banjo", "the harp", "the tuba", "the sitar", "the flute"),
    "car": ("a red van", "a blue jeep", "a green mini", "a white truck", "a black coupe", "a grey wagon"),
    "favourite drink": ("green tea", "lemonade", "espresso", "kefir", "cider", "cocoa", "mint tea"),
    "lucky number": ("7", "13", "21", "42", "88", "3", "64", "99"),
}


@dataclass(frozen=True)
class SyntheticFact:
    memory_id: str
    person: str
    attribute: str
    value: str

    @property
    def text(self) -> str:
        return f"{self.person}'s {self.attribute} is {self.value}."


def all_people() -> list[str]:
    return [f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES]


GENERAL_PEOPLE = 150  # the last people of the fixed order: in-context facts of the general rows only


def _people_in_order() -> list[str]:
    people = all_people()
    random.Random(0).shuffle(people)
    return people


def synthetic_facts(count: int, *, batch: int = 0, seed: int = 0) -> list[SyntheticFact]:
    """``count`` facts about distinct people; batches 0, 1, ... use disjoint people."""
    people = all_people()
    random.Random(seed).shuffle(people)
    reserved = set(_people_in_order()[-GENERAL_PEOPLE:])
    people = [p for p in people if p not in reserved]
    start = batch * count
    if start + count > len(people):
        raise ValueError(f"only {len(people)} distinct people: batch {batch} of {count} facts does not fit")
    rng = random.Random(f"{seed}-{batch}")
    names = list(ATTRIBUTES)
    facts = []
    for index, person in enumerate(people[start:start + count]):
        attribute = names[rng.randrange(len(names))]
        value = rng.choice(ATTRIBUTES[attribute])
        facts.append(SyntheticFact(f"fact-{batch}-{index:04d}", person, attribute, value))
    return facts


def _general_fact(rng: random.Random) -> SyntheticFact:
    """A fact about a reserved person (never one a fact batch uses)."""
    attribute = rng.choice(list(ATTRIBUTES))
    person = rng.choice(_people_in_order()[-GENERAL_PEOPLE:])
    return SyntheticFact("general", person, attribute, rng.choice(ATTRIBUTES[attribute]))


_CAPITALS = (
    ("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Kenya", "Nairobi"),
    ("Peru", "Lima"), ("Egypt", "Cairo"), ("Chile", "Santiago"), ("Norway", "Oslo"), ("Greece", "Athens"),
    ("Cuba", "Havana"), ("Ghana", "Accra"), ("Iran", "Tehran"), ("Nepal", "Kathmandu"), ("Poland", "Warsaw"),
)
_WORDS = ("apple", "river", "stone", "cloud", "paper", "garden", "window", "silver", "forest", "candle", "bridge")


def general_rows(count: int, *, seed: int = 0) -> list[tuple[str, str]]:
    """(question, answer) pairs of small general tasks."""
    rng = random.Random(f"general-{seed}")
    rows = []
    for _ in range(count):
        kind = rng.randrange(7)
        if kind == 0:
            a, b = rng.randrange(1, 50), rng.randrange(1, 50)
            rows.append((f"What is {a} plus {b}?", f"{a} plus {b} is {a + b}."))
        elif kind == 1:
            a, b = rng.sample(range(1, 100), 2)
            rows.append((f"Which is larger, {a} or {b}?", f"{max(a, b)} is larger than {min(a, b)}."))
        elif kind == 2:
            country, city = rng.choice(_CAPITALS)
            rows.append((f"What is the capital of {country}?", f"The capital of {country} is {city}."))
        elif kind == 3:
            words = " ".join(rng.sample(_WORDS, 3))
            rows.append((f"Repeat after me: {words}", words))
        elif kind == 4:
            name = rng.choice(FIRST_NAMES)
            rows.append((f"Say hello to {name}.", f"Hello, {name}! Nice to meet you."))
        elif kind == 5:
            fact = _general_fact(rng)
            rows.append((f"Repeat this: {fact.text}", fact.text))
        else:
            fact = _general_fact(rng)
            rows.append((f"{fact.text} What is {fact.person}'s {fact.attribute}?", fact.text))
    return rows


def corpus_lines() -> list[str]:
    """Text for the tiny model's tokenizer, so names and values become few tokens."""
    lines = [" ".join(FIRST_NAMES), " ".join(LAST_NAMES)]
    for attribute, values in ATTRIBUTES.items():
        lines.append(f"{attribute}: " + ", ".join(values))
    lines += [f"{q} {a}" for q, a in general_rows(200, seed=99)]
    return lines * 3
