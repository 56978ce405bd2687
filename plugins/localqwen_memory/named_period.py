"""The day or month a message names ("on 3 June, 2023", "June 3, 2023", "in January 2022"), as a
range of dates, so text recall can lift the memories dated then (``recall.RankSettings.date_weight``).

People ask a memory chat about times ("What did I start on 3 June?"); a memory's date is its
``valid_from`` (for a chat turn, when it was said). Only explicit calendar dates count: a year alone
("in 2022") is too broad to help, and relative phrases ("last week") need the date the question
refers to, which the ranking does not know; nor is a day without its year ("3 June"), which a
long memory may hold in several years.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
               "november", "december")
_MONTH = r"(" + "|".join(MONTH_NAMES) + r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
# Most specific first: a day with its month and year, then a month with its year.
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY} (?:of )?{_MONTH},? {_YEAR}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH} {_DAY},? {_YEAR}\b", re.IGNORECASE)
_ISO_DAY = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},? {_YEAR}\b", re.IGNORECASE)


def _month(name: str) -> int:
    name = name.lower().rstrip(".")
    return next(number for number, full in enumerate(MONTH_NAMES, 1) if full.startswith(name[:3]))


def named_period(text: str) -> tuple[date, date] | None:
    """The first calendar day or month ``text`` names, as (first day, last day); None when it names
    none (or an impossible date such as 31 June)."""
    try:
        if match := _ISO_DAY.search(text):
            day = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
            return day, day
        if match := _DAY_MONTH_YEAR.search(text):
            day = date(int(match.group(3)), _month(match.group(2)), int(match.group(1)))
            return day, day
        if match := _MONTH_DAY_YEAR.search(text):
            day = date(int(match.group(3)), _month(match.group(1)), int(match.group(2)))
            return day, day
        if match := _MONTH_YEAR.search(text):
            year, month = int(match.group(2)), _month(match.group(1))
            first = date(year, month, 1)
            last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
            return first, last
    except ValueError:  # "31 June 2023": not a date, so no period
        return None
    return None


def within(timestamp: float, period: tuple[date, date], slack_days: int) -> bool:
    """Whether a memory's time falls in ``period`` widened by ``slack_days`` on each side (people
    mention an event a few days after it happened: "I went hiking on Saturday")."""
    day = datetime.fromtimestamp(timestamp).date()
    return period[0] - timedelta(days=slack_days) <= day <= period[1] + timedelta(days=slack_days)
