"""The two statistics every benchmark report here uses: a rate's 95% interval and a paired test.

Pure arithmetic (``math`` only), shared by the plugins' evaluation suites and the bench scripts so
every reported interval is computed the same way."""

from __future__ import annotations

import math


def wilson_interval(successes: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval for a success rate (sane at 0% and 100%, unlike p ± 2 SE);
    (0, 0) when nothing was counted."""
    if total == 0:
        return 0.0, 0.0
    p = successes / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_p(only_first: int, only_second: int) -> float:
    """Exact two-sided McNemar p-value from the discordant pair counts (right only with the first,
    right only with the second)."""
    n = only_first + only_second
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_first, only_second) + 1)) / 2 ** n
    return min(1.0, 2 * tail)
