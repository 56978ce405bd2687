"""Fact extraction: the model reads a chat turn and proposes memories as JSON.

One turn goes: the raw user turn is stored first (it is always kept: on LoCoMo raw turns recall
better than extracted facts alone, and it is the fallback when extraction fails); then the model
is asked for ``{"facts": [...]}``. A reply that does not parse is retried with constrained output
where the engine supports it (``GenerationSettings.json_schema``: llama.cpp turns it into a grammar),
otherwise with a stricter follow-up message. When that fails too, the raw turn stays the turn's
only memory. Every failure is counted in the store (``stats()["counters"]``) and reported as a
Warning event by whoever ran the extraction (the chat shows it on the next turn).

After a chat turn this runs on one background thread per plugin (:class:`BackgroundExtractor`):
turns queue up in order and the answer never waits for it.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localqwen.vocabulary.cancel import CancelToken
from localqwen_memory.prompts import Prompts
from localqwen_memory.store import MemoryRecord, MemoryStore, MemoryStoreError
from localqwen_memory.updates import Decision, remember

# What the model must reply; also the schema the constrained retry enforces.
FACTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": 8,
            "items": {
                "type": "object",
                "properties": {
                    "fact": {"type": "string", "minLength": 3, "maxLength": 300},
                    "subject": {"type": "string", "maxLength": 60},
                    "attribute": {"type": "string", "maxLength": 60},
                    "value": {"type": "string", "maxLength": 200},
                },
                "required": ["fact", "subject", "attribute", "value"],
            },
        },
    },
    "required": ["facts"],
}

Path_ = Literal["json", "constrained", "retry", "raw"]


class ProposedFact(BaseModel):
    model_config = ConfigDict(extra="ignore")

    fact: str = Field(min_length=3, max_length=600)
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None


class FactsReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    facts: list[ProposedFact]


class FactsParseError(ValueError):
    """A reply that is not the facts JSON; the message says what is wrong with it."""


def parse_facts(reply: str) -> list[ProposedFact]:
    """The facts in a model reply. Tolerates a thinking block, a code fence and text around the
    JSON object (small models add them); anything else raises :class:`FactsParseError`."""
    text = re.sub(r"<think>.*?</think>", "", reply, flags=re.S).strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, flags=re.S)
    if fenced:
        text = fenced.group(1).strip()
    start = text.find("{")
    if start < 0:
        raise FactsParseError("no JSON object in the reply" if text else "empty reply")
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise FactsParseError(f"invalid JSON: {exc.msg} at character {exc.pos}") from None
    try:
        return FactsReply.model_validate(data).facts
    except ValidationError as exc:
        first = exc.errors()[0]
        raise FactsParseError(f"{'.'.join(str(p) for p in first['loc']) or 'reply'}: {first['msg']}") from None


_NO_ANSWER = "\x00no answer\x00"  # marks the line of the turn template that holds the (missing) answer


@dataclass
class Turn:
    """One chat turn to learn from; ``message_index`` is the user message's position in the session."""

    user: str
    assistant: str = ""
    session_id: int | None = None
    message_index: int | None = None
    at: float = field(default_factory=time.time)

    @property
    def date(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(self.at))


@dataclass
class Outcome:
    """What extraction did with one turn: which ``path`` produced the facts (``raw`` when none
    could be read), the decisions per fact, the raw turn's memory and the failures met."""

    path: Path_
    decisions: list[Decision] = field(default_factory=list)
    raw: MemoryRecord | None = None
    failures: list[str] = field(default_factory=list)

    @property
    def added(self) -> list[MemoryRecord]:
        return [d.memory for d in self.decisions if d.action in ("added", "superseded") and d.memory is not None]


class Extractor:
    """Extract facts from turns with ``engine`` into ``store``."""

    def __init__(self, store: MemoryStore, prompts: Prompts, engine: Any, *, max_new_tokens: int = 256) -> None:
        self.store = store
        self.prompts = prompts
        self.engine = engine
        self.max_new_tokens = max_new_tokens

    def messages(self, turn: Turn) -> list[dict[str, Any]]:
        text = self.prompts.format("extraction", "turn", date=turn.date, user=turn.user,
                                   assistant=turn.assistant or _NO_ANSWER)
        if not turn.assistant:
            # A turn without an answer (batch extraction, imports) leaves out the line that would
            # hold it: with "Assistant: (no answer)" there, the real 1.5B model extracted nothing
            # from any turn ("My sister's name is Ann and I live in Paris." -> no facts; two without).
            text = "\n".join(line for line in text.splitlines() if _NO_ANSWER not in line)
        return [{"role": "system", "content": self.prompts.format("extraction", "system")},
                {"role": "user", "content": text}]

    def extract(self, turn: Turn, persona: str = "default", cancel: CancelToken | None = None) -> Outcome:
        from localqwen.runtime.engine import GenerationSettings

        raw = self.store_raw(turn, persona)
        settings = GenerationSettings(max_new_tokens=self.max_new_tokens)
        messages = self.messages(turn)
        failures: list[str] = []
        facts: list[ProposedFact] | None = None
        path: Path_ = "json"
        try:
            reply = self.engine.chat(messages, settings=settings, cancel=cancel).text
            facts = parse_facts(reply)
        except FactsParseError as exc:
            failures.append(f"the reply was not the facts JSON ({exc})")
            self.store.count("extraction_parse_failed", persona)
            facts, path = self._retry(messages, reply, str(exc), settings, failures, persona, cancel)
        except Exception as exc:  # noqa: BLE001 - an engine failure must not lose the turn; it is counted
            failures.append(f"the model failed: {type(exc).__name__}: {exc}")
            self.store.count("extraction_engine_error", persona)
        if facts is None:
            self.store.count("extraction_raw_fallback", persona)
            return Outcome("raw", raw=raw, failures=failures)
        self.store.count(f"extraction_{path}", persona)
        decisions = []
        for proposed in facts:
            decisions.append(remember(self.store, turn.user if turn.user.strip() else proposed.fact, persona=persona,
                                      fact=proposed.fact, subject=proposed.subject, attribute=proposed.attribute,
                                      value=proposed.value, source_session=turn.session_id,
                                      source_message=turn.message_index, valid_from=turn.at))
        return Outcome(path, decisions=decisions, raw=raw, failures=failures)

    def _retry(self, messages, reply: str, error: str, settings, failures: list[str], persona: str,
               cancel: CancelToken | None) -> tuple[list[ProposedFact] | None, Path_]:
        if getattr(self.engine, "supports_structured_output", False):
            path: Path_ = "constrained"
            try:
                forced = dataclasses.replace(settings, json_schema=FACTS_SCHEMA)
                again = self.engine.chat(messages, settings=forced, cancel=cancel).text
            except Exception as exc:  # noqa: BLE001 - counted, then the raw turn stands
                failures.append(f"the constrained retry failed: {type(exc).__name__}: {exc}")
                self.store.count("extraction_failed", persona)
                return None, path
        else:
            path = "retry"
            follow_up = [*messages, {"role": "assistant", "content": reply},
                         {"role": "user", "content": self.prompts.format("extraction", "retry", error=error)}]
            try:
                again = self.engine.chat(follow_up, settings=settings, cancel=cancel).text
            except Exception as exc:  # noqa: BLE001
                failures.append(f"the retry failed: {type(exc).__name__}: {exc}")
                self.store.count("extraction_failed", persona)
                return None, path
        try:
            return parse_facts(again), path
        except FactsParseError as exc:
            failures.append(f"the {path} retry was not the facts JSON either ({exc})")
            self.store.count("extraction_failed", persona)
            return None, path

    def store_raw(self, turn: Turn, persona: str) -> MemoryRecord | None:
        if not turn.user.strip():
            return None
        try:
            memory, _ = self.store.add(turn.user, persona=persona, kind="turn", context=f"user, {turn.date}",
                                       source_session=turn.session_id, source_message=turn.message_index,
                                       valid_from=turn.at)
        except MemoryStoreError:  # its words were forgotten on request: do not keep them again
            return None
        return memory


def describe_failures(outcome: Outcome) -> str:
    kept = "kept the raw turn" if outcome.raw is not None else "kept nothing (the words were forgotten before)"
    return "memory extraction failed, " + kept + ": " + "; ".join(outcome.failures)


class BackgroundExtractor:
    """One worker thread that extracts queued turns in order; the chat never waits for it.

    Failures are kept per session until the chat reports them (``take_warnings``)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[Callable[[], Outcome], int | None] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._warnings: dict[int | None, list[str]] = {}
        self._idle = threading.Event()
        self._idle.set()
        self.outcomes: list[Outcome] = []

    def submit(self, extractor: Extractor, turn: Turn, persona: str) -> None:
        with self._lock:
            self._idle.clear()
            self._queue.put((lambda: extractor.extract(turn, persona), turn.session_id))
            if self._thread is None or not self._thread.is_alive():
                # Not a daemon: at exit Python waits for the queued turns to be extracted. A daemon
                # thread killed inside torch aborts the process ("terminate called...", exit 134)
                # and would drop the last turns' memories.
                self._thread = threading.Thread(target=self._work, name="memory-extraction", daemon=False)
                self._thread.start()

    def _work(self) -> None:
        while True:
            # The thread ends as soon as the queue is empty (a lingering thread at interpreter exit
            # aborts the process inside torch); submit() starts a new one.
            with self._lock:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    self._thread = None
                    self._idle.set()
                    return
            job, session = item  # type: ignore[misc]
            try:
                outcome = job()
                self.outcomes.append(outcome)
                if outcome.failures:
                    self._add_warning(session, describe_failures(outcome))
            except Exception as exc:  # noqa: BLE001 - a background thread has nobody to raise to
                self._add_warning(session, f"memory extraction crashed: {type(exc).__name__}: {exc}")
            finally:
                self._queue.task_done()

    def _add_warning(self, session: int | None, message: str) -> None:
        with self._lock:
            self._warnings.setdefault(session, []).append(message)

    def take_warnings(self, session: int | None) -> list[str]:
        with self._lock:
            return self._warnings.pop(session, [])

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every queued turn is done and the worker has ended (tests, shutdown); True when idle."""
        idle = self._idle.wait(timeout)
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return idle
