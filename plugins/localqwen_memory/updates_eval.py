"""``evaluate --suite updates``: do contradictions and "forget" work, every time?

100 scripted contradiction pairs (25 attributes x 4 subjects: "my favourite colour is blue",
later "my favourite colour is green"; "Ann's car is ...") go through the same ``remember`` the
chat and the ``add`` action use, in a throw-away store (your memories are not touched). Then each
attribute is asked about: the current value must be recalled and the old one must not
(``current_value_rate``; ``top1_rate`` also wants the current fact first). Then 100 other facts
are forgotten, half by id and half by a "forget that ..." sentence, and each must be gone from
recall and from the consolidation set (``forget_rate``). Goal: 1.0 for both.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localqwen.vocabulary import events as ev

ATTRIBUTES = {
    "favourite colour": ["blue", "green", "crimson", "yellow", "violet"],
    "car": ["a red Volvo", "a blue Fiat", "a Tesla", "an old Saab", "a Honda Civic"],
    "phone": ["an iPhone", "a Pixel", "a Nokia", "a Fairphone", "a Galaxy"],
    "dog's name": ["Rex", "Biscuit", "Luna", "Pepper", "Odin"],
    "favourite food": ["sushi", "lasagna", "tacos", "ramen", "paella"],
    "employer": ["Siemens", "Airbus", "Philips", "Nestle", "Ikea"],
    "job": ["nurse", "architect", "plumber", "teacher", "pilot"],
    "home city": ["Lisbon", "Oslo", "Krakow", "Lyon", "Bergen"],
    "favourite band": ["Radiohead", "ABBA", "Metallica", "Portishead", "Queen"],
    "favourite sport": ["tennis", "rowing", "fencing", "curling", "squash"],
    "bank": ["Santander", "Revolut", "Barclays", "Monzo", "Rabobank"],
    "gym": ["FitOne", "IronHouse", "PulseLab", "CoreCamp", "LiftHub"],
    "dentist": ["Dr Moreau", "Dr Ilves", "Dr Santos", "Dr Okafor", "Dr Lind"],
    "favourite book": ["Dune", "Emma", "Ulysses", "Beloved", "Solaris"],
    "laptop": ["a ThinkPad", "a MacBook", "a Framework", "a Dell XPS", "a Surface"],
    "favourite drink": ["espresso", "kombucha", "lemonade", "rooibos", "matcha"],
    "shoe size": ["38", "41", "43", "45", "39"],
    "favourite film": ["Alien", "Amelie", "Heat", "Vertigo", "Up"],
    "bike": ["a Brompton", "a Trek", "a Cube", "a Gazelle", "a Canyon"],
    "language course": ["Italian", "Finnish", "Korean", "Greek", "Swahili"],
    "garden plant": ["tomatoes", "tulips", "basil", "roses", "lavender"],
    "morning routine": ["yoga", "jogging", "swimming", "reading", "stretching"],
    "favourite season": ["winter", "spring", "autumn", "summer", "monsoon"],
    "holiday plan": ["Iceland", "Japan", "Peru", "Morocco", "Vietnam"],
    "instrument": ["cello", "banjo", "oboe", "harp", "drums"],
}
SUBJECTS = ["my", "Ann's", "Bob's", "Carla's"]


def contradiction_pairs(seed: int = 14) -> list[tuple[str, str, str, str, str, str, str]]:
    """(subject, attribute, old value, new value, old statement, new statement, query) x 100, reproducible."""
    rng = random.Random(seed)
    pairs = []
    for attribute, values in ATTRIBUTES.items():
        for subject in SUBJECTS:
            old, new = rng.sample(values, 2)
            owner = subject.capitalize() if subject == "my" else subject
            pairs.append((subject, attribute, old, new, f"{owner} {attribute} is {old}.",
                          f"{owner} {attribute} is {new}.", f"What is {subject} {attribute}?"))
    return pairs


def evaluate_updates(store, *, k: int = 6) -> dict[str, Any]:
    """Run the suite on ``store`` (persona ``updates-eval`` and ``forget-eval``); return the report."""
    from localqwen_memory.updates import forget_by_id, forget_matching, remember

    persona = "updates-eval"
    pairs = contradiction_pairs()
    superseded = 0
    for _, _, _, _, old_text, _, _ in pairs:
        remember(store, old_text, persona=persona, valid_from=time.time() - 3600)
    for _, _, _, _, _, new_text, _ in pairs:
        decision = remember(store, new_text, persona=persona)
        superseded += decision.action == "superseded"
    current = top1 = 0
    failures = []
    for subject, attribute, old, new, _, _, query in pairs:
        hits = [h for h in store.search(query, persona, k=k)]
        texts = [h.memory.statement for h in hits]
        relevant = [t for t in texts if attribute in t.lower() and t.lower().startswith(subject.lower())]
        has_new = any(t.endswith(f" {new}.") for t in relevant)
        has_old = any(t.endswith(f" {old}.") for t in texts if attribute in t.lower()
                      and t.lower().startswith(subject.lower()))
        current += has_new and not has_old
        top1 += bool(texts) and texts[0].lower().startswith(subject.lower()) and texts[0].endswith(f" {new}.")
        if not (has_new and not has_old):
            failures.append({"query": query, "expected": new, "old": old, "recalled": texts})
    forget_persona = "forget-eval"
    facts = [f"I once visited {place} with {friend}." for place in ATTRIBUTES["holiday plan"] + ATTRIBUTES["home city"]
             for friend in ("my uncle", "my neighbour", "a colleague", "my cousin", "Ann", "Bob", "Carla", "Dana",
                            "Eli", "Finn")]
    memories = [remember(store, fact, persona=forget_persona).memory for fact in facts]
    gone = 0
    for number, (fact, memory) in enumerate(zip(facts, memories, strict=True)):
        if number % 2:
            forget_by_id(store, memory.id, forget_persona)
        else:
            forget_matching(store, fact.replace("I once visited", "I visited"), forget_persona)
        recalled = {h.memory.id for h in store.search(fact, forget_persona, k=k)}
        in_set = {m.id for m in store.consolidation_set(forget_persona)}
        if memory.id not in recalled and memory.id not in in_set and store.get(memory.id).status == "forgotten":
            gone += 1
        else:
            failures.append({"forget": fact, "id": memory.id, "status": store.get(memory.id).status})
    return {"pairs": len(pairs), "superseded": superseded, "current_value_rate": current / len(pairs),
            "top1_rate": top1 / len(pairs), "forget_total": len(facts), "forget_rate": gone / len(facts),
            "k": k, "failures": failures[:10]}


def run_suite(ctx, form) -> Iterator[Any]:
    from localqwen.storage.database import Database
    from localqwen_memory.store import MemoryStore, memory_embedder

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memory-updates-") as folder:
        database = Database(Path(folder) / "memory.sqlite3")
        store = MemoryStore(database, Path(folder) / "vectors", embedder=memory_embedder(ctx))
        yield ev.Progress(done=0, total=1, message="100 contradiction pairs, 100 forget requests")
        report = evaluate_updates(store)
        database.close()
    report["elapsed_s"] = round(time.perf_counter() - started, 2)
    yield ev.Table(title="Updates suite", columns=["check", "value", "goal"],
                   rows=[["current value recalled, old one not", report["current_value_rate"], 1.0],
                         ["current value first", report["top1_rate"], "-"],
                         ["forgotten: gone from recall and consolidation set", report["forget_rate"], 1.0]])
    ok = report["current_value_rate"] == 1.0 and report["forget_rate"] == 1.0
    if not ok:
        yield ev.Warning(message=f"updates suite below goal: {report['failures'][:3]}")
    yield ev.Done(status="ok", summary=f"current value {report['current_value_rate']:.0%}, "
                                      f"forget {report['forget_rate']:.0%}", result=report)
