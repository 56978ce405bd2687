"""How often the dates that recall puts after relative times (``relative_dates``) agree with
LoCoMo's answers to its temporal questions, against the date the memory was said.

LoCoMo's temporal questions ("When did Caroline go to the adoption meeting?") come with answers such
as "The friday before 15 July 2023", "The week before 9 June 2023", "2022" or "7 May 2023", and with
their evidence turns. A model shown a turn and its date answers from what it is shown: without help
it gives the date the turn was said; with ``with_dates`` it can give the date worked out. Here both
are compared with the answer, no model involved: an answer parsed into the days it names (see
:func:`answer_days`), the evidence turns' relative times resolved from their session's date, and
agreement when the days overlap. Answers that name no date ("four months", "UK") are skipped and
counted. The session date is the baseline, measured in the same run.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from localqwen_memory.locomo_eval import session_time, turns_of
from localqwen_memory.named_period import MONTH_NAMES, named_period
from localqwen_memory.relative_dates import WEEKDAYS, add_months, month_end, relative_times

_MONTH = r"(" + "|".join(MONTH_NAMES) + r")"
_DATE = rf"(\d{{1,2}}) ?{_MONTH},? ?((?:19|20)\d\d)"
_BEFORE = re.compile(rf"^(?:on )?(?:the |a |last )?(week|weekend|few days|{'|'.join(WEEKDAYS)}) (before|after) {_DATE}$")
_MONTH_FIRST = re.compile(rf"\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?,? ((?:19|20)\d\d)")
_COUNTED = re.compile(rf"^(a|one|two|three|four|five|six|\d) (day|week|month)s? (before|after) {_DATE}$")
_WORDS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_WEEK_OF_MONTH = re.compile(rf"^(?:the )?(first|last) week of {_MONTH},? ((?:19|20)\d\d)$")
_YEAR = re.compile(r"^(?:in |since )?((?:19|20)\d\d)$")
_SEASON = re.compile(r"^(?:in )?(summer|winter|spring|fall|autumn) ((?:19|20)\d\d)$")


def answer_days(answer: str) -> tuple[date, date] | None:
    """The days a LoCoMo temporal answer names, both included; None when it names no date."""
    text = re.sub(r"[.\s]+$", "", " ".join(str(answer).split())).lower()
    text = _MONTH_FIRST.sub(lambda m: f"{m.group(2)} {m.group(1)} {m.group(3)}", text)  # "october 13th, 2023"
    text = re.sub(rf"^(?:on )?(?:{'|'.join(WEEKDAYS)}),? (?=\d)", "", text)  # "Friday 14 July 2023": the day
    try:
        if match := _BEFORE.match(text):
            what, side = match.group(1), match.group(2)
            said = date(int(match.group(5)), MONTH_NAMES.index(match.group(4)) + 1, int(match.group(3)))
            return _around(what, side, said)
        if match := _COUNTED.match(text):
            count = int(match.group(1)) if match.group(1).isdigit() else _WORDS[match.group(1)]
            said = date(int(match.group(6)), MONTH_NAMES.index(match.group(5)) + 1, int(match.group(4)))
            days = {"day": 1, "week": 7, "month": 30}[match.group(2)] * count * (-1 if match.group(3) == "before" else 1)
            slack = 0 if match.group(2) == "day" else 3
            return said + timedelta(days=days - slack), said + timedelta(days=days + slack)
        if match := _WEEK_OF_MONTH.match(text):
            month, year = MONTH_NAMES.index(match.group(2)) + 1, int(match.group(3))
            first = date(year, month, 1)
            last = month_end(first)
            return (first, first + timedelta(days=6)) if match.group(1) == "first" else (last - timedelta(days=6), last)
        if match := _YEAR.match(text):
            year = int(match.group(1))
            return date(year, 1, 1), date(year, 12, 31)
        if match := _SEASON.match(text):
            year, months = int(match.group(2)), {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11),
                                                  "winter": (12, 14)}[match.group(1)]
            first = date(year, months[0], 1)
            return first, month_end(add_months(first, months[1] - months[0]))
    except ValueError:
        return None
    # Only a bare date ("7 May 2023", "on 9 April, 2023", "June 2023"): named_period finds a date
    # anywhere, and "the week of 23 August 2023" is not that day.
    rest = re.sub(rf"{_DATE}|{_MONTH},? (?:19|20)\d\d|\b(?:on|in)\b", "", text)
    return named_period(text) if not rest.strip(" ,") else None


def _around(what: str, side: str, said: date) -> tuple[date, date]:
    """The days "the <what> before/after <said>" names, worked out here on its own rather than with
    ``relative_dates``' helpers, so the check does not grade that module's arithmetic by itself."""
    step = -1 if side == "before" else 1
    if what in ("week", "few days"):  # the seven days before (after) the day said
        return (said - timedelta(days=7), said - timedelta(days=1)) if step < 0 else \
            (said + timedelta(days=1), said + timedelta(days=7))
    if what == "weekend":
        day = said + timedelta(days=step)
        while day.weekday() != (6 if step < 0 else 5):  # the nearest Sunday before / Saturday after
            day += timedelta(days=step)
        return (day - timedelta(days=1), day) if step < 0 else (day, day + timedelta(days=1))
    day = said + timedelta(days=step)
    while day.weekday() != WEEKDAYS.index(what):
        day += timedelta(days=step)
    return day, day


def evaluate_relative_dates(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The report: per temporal question with a dated answer, whether the session date of its
    evidence, and whether the dates recall shows (each relative time's, else the session date),
    fall in the answer's days; overall and on the questions whose evidence holds a relative time."""
    rows = []
    skipped = 0
    for sample in samples:
        turns = {turn["id"]: turn for turn in turns_of(sample)}
        for qa in sample["qa"]:
            if qa.get("category") != 2:
                continue
            wanted = answer_days(qa.get("answer", ""))
            evidence = [turns[e] for e in qa.get("evidence", []) if e in turns]
            if wanted is None or not evidence:
                skipped += 1
                continue
            said: list[tuple[date, date]] = []
            shown: list[tuple[date, date]] = []
            relative = False
            for turn in evidence:
                at = session_time(turn["date"])
                if at is None:
                    continue
                day = date.fromtimestamp(at)
                found = relative_times(turn["text"], at)
                relative = relative or bool(found)
                said.append((day, day))
                shown += [(f.first, f.last) for f in found] or [(day, day)]
            rows.append({"question": qa["question"], "answer": qa["answer"],
                         "relative": relative,
                         "said_agrees": any(_overlap(span, wanted) for span in said),
                         "shown_agrees": any(_overlap(span, wanted) for span in shown),
                         "shown_spans": len(shown)})

    def share(subset: list[dict[str, Any]], key: str) -> float:
        return round(sum(row[key] for row in subset) / len(subset), 4) if subset else 0.0

    relative = [row for row in rows if row["relative"]]
    return {
        "questions": len(rows), "skipped_no_date_in_answer": skipped,
        "said_date_agrees": share(rows, "said_agrees"), "shown_dates_agree": share(rows, "shown_agrees"),
        "with_relative_time": len(relative),
        "with_relative_time_said_date_agrees": share(relative, "said_agrees"),
        "with_relative_time_shown_dates_agree": share(relative, "shown_agrees"),
        "with_several_dates_shown": sum(1 for row in relative if row["shown_spans"] > 1),
        "misses": [{k: row[k] for k in ("question", "answer")} for row in relative if not row["shown_agrees"]][:8],
    }


def dates_agree(prediction: str, answer: str) -> bool | None:
    """Whether a model's answer names days that overlap the days LoCoMo's answer names; None when
    the LoCoMo answer names no date (an answer naming none, or another form, does not agree)."""
    wanted = answer_days(answer)
    if wanted is None:
        return None
    given = answer_days(prediction)
    return given is not None and _overlap(given, wanted)


def _overlap(span: tuple[date, date], wanted: tuple[date, date]) -> bool:
    return span[0] <= wanted[1] and wanted[0] <= span[1]
