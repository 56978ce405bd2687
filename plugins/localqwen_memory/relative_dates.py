"""Relative times in a memory ("yesterday", "last Friday", "next month") followed by the date they
meant, worked out from when the memory was said: "I went hiking yesterday (6 May 2023)".

A memory is read long after it was said. Its text keeps the speaker's words (the store never
rewrites them), and the recall prompt shows its date, but a small model does not do the
arithmetic: asked "When did Caroline go to the adoption meeting?" over "last Friday", dated 15 July
2023, the real 1.5B model answers "15 July 2023", the day it was *said*. So the text put in front
of the model (and shown in the chat's recall step) carries each relative time's date in
brackets, computed here, the same every time.

What is resolved, and how exactly: a day ("yesterday", "last night", "tomorrow", "the day before
yesterday", "last Friday", "next Friday", "3 days ago") becomes that day; a week or weekend becomes
the week around the date said ("the week before 15 July 2023") or the weekend's two days; a month or
year ("last month", "next year", "two months ago") that month or year; a few weeks ("two weeks
ago", "in three weeks") a day with "around"; vague counts ("a few days ago") stay vague, anchored
("a few days before 15 July 2023"); a duration up to now ("I've been vegan for 5 years") its start
("since about 2018"). Seasons, "this weekend", "this <weekday>" and a bare weekday
("on Friday") are left alone: whether they are past or coming depends on the tense, which a
pattern does not read. Phrases that only look relative are left alone too: "the last week of
June", "my last year of college", "the past year".
"""

from __future__ import annotations

import re
import time
from datetime import date, timedelta

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")  # English whatever the locale, as the prompts (recall.MONTHS)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2}
_VAGUE = ("a few", "few", "several", "some")
_UNITS = r"(day|week|month|year)s?"
_COUNT = r"(\d{1,2}|a couple of|couple of|a few|few|several|some|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_WEEKDAY = r"(" + "|".join(WEEKDAYS) + r")"
# One alternation, longest phrases first, so "the day before yesterday" is not also "yesterday".
_PHRASE = re.compile(
    r"\b(?:"
    r"(?P<before_yesterday>the day before yesterday)"
    r"|(?P<after_tomorrow>the day after tomorrow)"
    r"|(?P<ago>" + _COUNT + r" " + _UNITS + r" ago)"
    r"|(?P<ahead>in " + _COUNT + r" " + _UNITS + r")"
    r"|(?P<yesterday>yesterday|last night)"
    r"|(?P<today>today|tonight|this (?:morning|afternoon|evening))"
    r"|(?P<tomorrow>tomorrow)"
    r"|(?P<weekday>(?:last|next|this past) " + _WEEKDAY + r")"
    r"|(?P<weekend>(?:last|next|this past) weekend)"
    r"|(?P<period>(?:last|this|next|this past) (?:week|month|year))"
    r")(?P<possessive>'s|’s)?(?!\w)(?! of\b)",
    re.IGNORECASE,
)
# "I've been vegan for 5 years (now)": a duration up to the day said, so it tells since when; only
# after a present perfect in the same sentence ("I lived there for 3 years" tells nothing).
_SINCE = re.compile(r"\bfor (?:about |almost |nearly |over |around |the (?:past|last) )?" + _COUNT
                    + r" (year|month)s?(?: now)?(?!\w)", re.IGNORECASE)
_PERFECT = re.compile(r"\b(?:have|has|'ve|’ve|been)\b", re.IGNORECASE)
_OWNER = re.compile(r"(?:\b(?:my|your|his|her|its|our|their|the|a|that|this)|'s|’s)\s*$", re.IGNORECASE)


def with_dates(text: str, said_at: float) -> str:
    """``text`` with the date of each relative time it holds in brackets after it; ``said_at``: when
    it was said (a Unix time, read in local time as the memory's date is)."""
    if not text:
        return text
    moment = time.localtime(said_at)
    anchor = date(moment.tm_year, moment.tm_mon, moment.tm_mday)

    def annotate(match: re.Match[str]) -> str:
        if re.match(r"(?i)last|next|this", match.group(0)) and _OWNER.search(text[: match.start()][-12:]):
            return match.group(0)  # "my last year", "the next month": an ordinal, not a time
        meant = _meaning(match, anchor)
        return f"{match.group(0)} ({meant})" if meant else match.group(0)

    dated = _PHRASE.sub(annotate, text)

    def since(match: re.Match[str]) -> str:
        sentence = re.split(r"[.!?]\s", dated[: match.start()])[-1]
        count_words, unit = match.group(1).lower(), match.group(2).lower()
        if not _PERFECT.search(sentence) or count_words in _VAGUE:
            return match.group(0)
        count = int(count_words) if count_words.isdigit() else _NUMBERS[count_words]
        start = str(anchor.year - count) if unit == "year" else _month(_add_months(anchor, -count))
        return f"{match.group(0)} (since about {start})"

    return _SINCE.sub(since, dated)


def _meaning(match: re.Match[str], anchor: date) -> str | None:
    kind = next(name for name, value in match.groupdict().items() if value and name != "possessive")
    phrase = match.group(kind).lower()
    if kind == "before_yesterday":
        return _day(anchor - timedelta(days=2))
    if kind == "after_tomorrow":
        return _day(anchor + timedelta(days=2))
    if kind == "yesterday":
        return _day(anchor - timedelta(days=1))
    if kind == "today":
        return _day(anchor)
    if kind == "tomorrow":
        return _day(anchor + timedelta(days=1))
    if kind == "weekday":
        return _weekday(phrase, anchor)
    if kind == "weekend":
        return _weekend(phrase, anchor)
    if kind == "period":
        return _period(phrase, anchor)
    if kind in ("ago", "ahead"):
        return _counted(phrase, anchor, ahead=kind == "ahead")
    return None


def _day(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def _month(day: date) -> str:
    return f"{MONTHS[day.month - 1]} {day.year}"


def _weekday(phrase: str, anchor: date) -> str:
    """"last Friday": the latest Friday before the day said; "next Friday": the first one after it."""
    wanted = WEEKDAYS.index(phrase.split()[-1])
    if phrase.startswith("next"):
        day = anchor + timedelta(days=(wanted - anchor.weekday() - 1) % 7 + 1)
    else:
        day = anchor - timedelta(days=(anchor.weekday() - wanted - 1) % 7 + 1)
    return f"{WEEKDAYS[wanted].capitalize()} {_day(day)}"


def _weekend(phrase: str, anchor: date) -> str:
    """"last weekend": the Saturday and Sunday before the day said (a weekend said on its own
    Sunday is that one's previous); "next weekend": the first Saturday after it and its Sunday."""
    if phrase.startswith("next"):
        saturday = anchor + timedelta(days=(5 - anchor.weekday() - 1) % 7 + 1)
    else:
        sunday = anchor - timedelta(days=(anchor.weekday() - 6 - 1) % 7 + 1)
        saturday = sunday - timedelta(days=1)
    sunday = saturday + timedelta(days=1)
    if saturday.month == sunday.month:
        return f"{saturday.day}-{sunday.day} {MONTHS[sunday.month - 1]} {sunday.year}"
    return f"{_day(saturday)} - {_day(sunday)}"


def _period(phrase: str, anchor: date) -> str:
    which, unit = phrase.rsplit(" ", 1)
    step = {"last": -1, "this past": -1, "this": 0, "next": 1}[which]
    if unit == "week":
        return {-1: "the week before", 0: "the week of", 1: "the week after"}[step] + f" {_day(anchor)}"
    if unit == "month":
        return _month(_add_months(anchor, step))
    return str(anchor.year + step)


def _counted(phrase: str, anchor: date, *, ahead: bool) -> str:
    words = phrase.split()
    if ahead:
        words = words[1:]  # "in"
    else:
        words = words[:-1]  # "ago"
    unit = words[-1].rstrip("s")
    count_words = " ".join(words[:-1])
    if count_words in _VAGUE:
        return f"{count_words} {unit}s {'after' if ahead else 'before'} {_day(anchor)}"
    count = int(count_words) if count_words.isdigit() else _NUMBERS[count_words]
    sign = 1 if ahead else -1
    if unit == "day":
        return _day(anchor + timedelta(days=sign * count))
    if unit == "week":
        return "around " + _day(anchor + timedelta(weeks=sign * count))
    if unit == "month":
        return _month(_add_months(anchor, sign * count))
    return str(anchor.year + sign * count)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)
