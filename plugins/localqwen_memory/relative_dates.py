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
June", "my last year of college", "the past year", "a month-long course".
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import date, timedelta

from localqwen_memory.named_period import MONTH_NAMES

MONTHS = tuple(name.capitalize() for name in MONTH_NAMES)  # English whatever the locale: the prompts are English
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2}
_VAGUE = ("a few", "few", "several", "some")
_UNITS = r"(day|week|month|year)s?"
_COUNT = r"(\d{1,2}|a couple of|couple of|a few|few|several|some|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
# Days as people shorten them in chat ("last Tues"); not "sun", which is also the word.
_SHORT_DAYS = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "weds": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4,
               "sat": 5}
_WEEKDAY = r"(" + "|".join(WEEKDAYS) + "|" + "|".join(sorted(_SHORT_DAYS, key=len, reverse=True)) + r")"
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
    r")(?P<possessive>'s|’s)?(?![\w-])(?! of\b)",
    re.IGNORECASE,
)
# "I've been vegan for 5 years (now)": a duration up to the day said, so it tells since when; only
# after a present perfect in the same sentence ("I lived there for 3 years" tells nothing).
_SINCE = re.compile(r"\bfor (?:about |almost |nearly |over |around |the (?:past|last) )?" + _COUNT
                    + r" (year|month)s?(?: now)?(?!\w)", re.IGNORECASE)
_PERFECT = re.compile(r"\b(?:have|has|'ve|’ve|been)\b", re.IGNORECASE)
_OWNER = re.compile(r"(?:\b(?:my|your|his|her|its|our|their|the|a|that|this)|'s|’s)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class RelativeTime:
    """One relative time in a text: where it is, how it is shown, and the days it can mean."""

    start: int  # the phrase's span in the text
    end: int
    shown: str  # what goes in the brackets: "Friday 14 July 2023", "the week before 15 July 2023"
    first: date  # the days it can mean, both included (a vague one, "a few days ago", a guess)
    last: date


def with_dates(text: str, said_at: float) -> str:
    """``text`` with the date of each relative time it holds in brackets after it; ``said_at``: when
    it was said (a Unix time, read in local time as the memory's date is)."""
    parts, done = [], 0
    for found in relative_times(text, said_at):
        parts += [text[done:found.end], f" ({found.shown})"]
        done = found.end
    return "".join(parts) + text[done:]


def relative_times(text: str, said_at: float) -> list[RelativeTime]:
    """The relative times in ``text`` (see the module's docstring), in order."""
    if not text:
        return []
    moment = time.localtime(said_at)
    anchor = date(moment.tm_year, moment.tm_mon, moment.tm_mday)
    found: list[RelativeTime] = []
    for match in _PHRASE.finditer(text):
        if re.match(r"(?i)last|next|this", match.group(0)) and _OWNER.search(text[: match.start()][-12:]):
            continue  # "my last year", "the next month": an ordinal, not a time
        shown, first, last = _meaning(match, anchor)
        found.append(RelativeTime(match.start(), match.end(), shown, first, last))
    for match in _SINCE.finditer(text):
        sentence = re.split(r"[.!?]\s", text[: match.start()])[-1]
        count_words, unit = match.group(1).lower(), match.group(2).lower()
        if not _PERFECT.search(sentence) or count_words in _VAGUE:
            continue
        count = int(count_words) if count_words.isdigit() else _NUMBERS[count_words]
        if unit == "year":
            start = date(anchor.year - count, 1, 1)
            shown, first, last = f"since about {start.year}", start, date(start.year, 12, 31)
        else:
            start = add_months(anchor, -count)
            shown, first, last = f"since about {_month(start)}", start, month_end(start)
        found.append(RelativeTime(match.start(), match.end(), shown, first, last))
    return sorted(found, key=lambda item: item.start)


Meant = tuple[str, date, date]


def _meaning(match: re.Match[str], anchor: date) -> Meant:
    kind = next(name for name, value in match.groupdict().items() if value and name != "possessive")
    phrase = match.group(kind).lower()
    if kind in ("before_yesterday", "after_tomorrow", "yesterday", "today", "tomorrow"):
        offset = {"before_yesterday": -2, "after_tomorrow": 2, "yesterday": -1, "today": 0, "tomorrow": 1}[kind]
        return _day(anchor + timedelta(days=offset))
    if kind == "weekday":
        return _weekday(phrase, anchor)
    if kind == "weekend":
        return _weekend(phrase, anchor)
    if kind == "period":
        return _period(phrase, anchor)
    return _counted(phrase, anchor, ahead=kind == "ahead")


def _day(day: date) -> Meant:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}", day, day


def _month(day: date) -> str:
    return f"{MONTHS[day.month - 1]} {day.year}"


def month_end(day: date) -> date:
    """The last day of ``day``'s month."""
    return add_months(day, 1) - timedelta(days=1)


def _whole_month(day: date) -> Meant:
    first = date(day.year, day.month, 1)
    return _month(first), first, month_end(first)


def _whole_year(year: int) -> Meant:
    return str(year), date(year, 1, 1), date(year, 12, 31)


def _weekday(phrase: str, anchor: date) -> Meant:
    """"last Friday": the latest Friday before the day said; "next Friday": the first one after it."""
    name = phrase.split()[-1]
    wanted = WEEKDAYS.index(name) if name in WEEKDAYS else _SHORT_DAYS[name]
    if phrase.startswith("next"):
        day = anchor + timedelta(days=(wanted - anchor.weekday() - 1) % 7 + 1)
    else:
        day = anchor - timedelta(days=(anchor.weekday() - wanted - 1) % 7 + 1)
    return f"{WEEKDAYS[wanted].capitalize()} {_day(day)[0]}", day, day


def _weekend(phrase: str, anchor: date) -> Meant:
    """"last weekend": the Saturday and Sunday before the day said (a weekend said on its own
    Sunday is that one's previous); "next weekend": the first Saturday after it and its Sunday."""
    if phrase.startswith("next"):
        saturday = anchor + timedelta(days=(5 - anchor.weekday() - 1) % 7 + 1)
    else:
        sunday = anchor - timedelta(days=(anchor.weekday() - 6 - 1) % 7 + 1)
        saturday = sunday - timedelta(days=1)
    sunday = saturday + timedelta(days=1)
    if saturday.month == sunday.month:
        return f"{saturday.day}-{sunday.day} {MONTHS[sunday.month - 1]} {sunday.year}", saturday, sunday
    return f"{_day(saturday)[0]} - {_day(sunday)[0]}", saturday, sunday


def _period(phrase: str, anchor: date) -> Meant:
    which, unit = phrase.rsplit(" ", 1)
    step = {"last": -1, "this past": -1, "this": 0, "next": 1}[which]
    if unit == "week":
        said = _day(anchor)[0]
        if step < 0:
            return f"the week before {said}", anchor - timedelta(days=7), anchor - timedelta(days=1)
        if step > 0:
            return f"the week after {said}", anchor + timedelta(days=1), anchor + timedelta(days=7)
        monday = anchor - timedelta(days=anchor.weekday())
        return f"the week of {said}", monday, monday + timedelta(days=6)
    if unit == "month":
        return _whole_month(add_months(anchor, step))
    return _whole_year(anchor.year + step)


# A vague count ("a few days ago") as the days it most likely means: two to seven days, two to five
# weeks, two to six months, two to six years.
_VAGUE_SPAN = {"day": (2, 7), "week": (14, 35), "month": (60, 183), "year": (730, 2190)}


def _counted(phrase: str, anchor: date, *, ahead: bool) -> Meant:
    words = phrase.split()
    words = words[1:] if ahead else words[:-1]  # without "in" / "ago"
    unit = words[-1].rstrip("s")
    count_words = " ".join(words[:-1])
    sign = 1 if ahead else -1
    if count_words in _VAGUE:
        near, far = (anchor + timedelta(days=sign * days) for days in _VAGUE_SPAN[unit])
        shown = f"{count_words} {unit}s {'after' if ahead else 'before'} {_day(anchor)[0]}"
        return shown, min(near, far), max(near, far)
    count = int(count_words) if count_words.isdigit() else _NUMBERS[count_words]
    if unit == "day":
        return _day(anchor + timedelta(days=sign * count))
    if unit == "week":
        middle = anchor + timedelta(weeks=sign * count)
        return f"around {_day(middle)[0]}", middle - timedelta(days=3), middle + timedelta(days=3)
    if unit == "month":
        return _whole_month(add_months(anchor, sign * count))
    return _whole_year(anchor.year + sign * count)


def add_months(day: date, months: int) -> date:
    """The first day of the month ``months`` after (before, when negative) ``day``'s."""
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)
