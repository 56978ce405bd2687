"""Facts the plugin's extractor drew from LoCoMo's turns, put back beside the raw turns.

``bench/bench_memory_real.py --part extraction`` runs the plugin's ``Extractor`` over LoCoMo's
turns with a real model and keeps one JSON line per turn (``extraction/<conversation>.jsonl`` in
its work dir: the turn, its speaker, session and time, and the facts with what ``remember`` did
with them). Extraction is slow on a CPU (seconds a turn), so the records are read back here by the
QA bench and by the retrieval evaluation (``bench_memory_locomo.py --extracted DIR``) instead of
being made again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def records_path(work_dir: Path, sample_id: str) -> Path:
    """One records file per conversation, so two processes extracting one conversation each never
    write the same file."""
    return work_dir / "extraction" / f"{sample_id}.jsonl"


def extraction_records(work_dir: Path) -> list[dict[str, Any]]:
    """Every conversation's records in ``work_dir``, and those of a work dir from before the split
    (one ``extraction.jsonl`` for all conversations), so a rerun there resumes instead of starting over."""
    paths = [work_dir / "extraction.jsonl", *sorted((work_dir / "extraction").glob("*.jsonl"))]
    return [record for path in paths if path.is_file() for record in read_jsonl(path)]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of one file; a last line cut off by a killed run is left out (it is redone)."""
    if not path.is_file():
        return []
    records = []
    lines = path.read_text("utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            if number == len(lines):
                break
            raise ValueError(f"{path}, line {number}: not a JSON record ({error.msg})") from error
    return records


def name_the_user(text: str, speaker: str) -> str:
    """The extraction prompt calls the one talking "the user"; LoCoMo's observations name them."""
    return re.sub(r"\b[Tt]he user\b", speaker, text)


def add_extracted_facts(store, records: list[dict[str, Any]], sample_id: str, persona: str) -> list[tuple[Any, str]]:
    """The facts extracted from conversation ``sample_id``, in the order of its turns, through the
    plugin's ``remember`` (duplicates skipped, contradictions superseded, as the extraction store
    did) into ``persona``. The extractor calls the one talking "the user" (in the chat there is
    one); here both speakers are, so each fact names its turn's speaker. Returns each fact's
    decision with the turn it came from ("D1:3")."""
    from localqwen_memory.updates import remember

    decisions = []
    for record in sorted((r for r in records if r["conversation_id"] == sample_id), key=lambda r: r["message_index"]):
        for fact in record["facts"]:
            text = name_the_user(fact["fact"], record["speaker"])
            subject = record["speaker"].lower() if fact.get("subject") in (None, "", "user") else fact["subject"]
            decision = remember(store, text, persona=persona, subject=subject, attribute=fact.get("attribute"),
                                value=fact.get("value"), source_session=record["session"],
                                source_message=record["message_index"], valid_from=record.get("at"))
            decisions.append((decision, record["turn"]))
    return decisions
