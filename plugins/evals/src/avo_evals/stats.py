"""Pass-rate statistics: the Wilson score interval and simple summaries."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

Z_95 = 1.959963984540054
"""The standard normal quantile for a two-sided 95 % interval."""


def wilson_interval(passes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of ``passes`` out of ``trials`` (``(0, 1)`` for no trials).

    Unlike the normal approximation it stays inside [0, 1] and does not collapse
    to a point at 0 or N passes, which matters for the small N evals use.
    """
    if trials <= 0:
        return 0.0, 1.0
    if not 0 <= passes <= trials:
        raise ValueError(f"passes must be between 0 and {trials}, got {passes}")
    p = passes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    center = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    low = 0.0 if passes == 0 else max(0.0, center - half)
    high = 1.0 if passes == trials else min(1.0, center + half)
    return low, high


def summary(values: Sequence[float]) -> dict[str, float]:
    """``mean``, ``median``, ``min`` and ``max`` of ``values`` (zeros when empty)."""
    if not values:
        return {"mean": 0.0, "median": 0.0, "min": 0.0, "max": 0.0}
    return {
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
    }


__all__ = ["Z_95", "summary", "wilson_interval"]
