"""Garbage-collector tuning for long-running server processes.

A process that drives many runs at once (``avo worker``, ``avo ui``,
``avo serve-mcp``) keeps every live run's transcript, checkpoint and pending
objects in memory. CPython's cyclic collector walks its youngest generation
every 700 allocations and the older ones every 10 of those, so with many runs
alive most of its walks go over objects that will live as long as their runs
do; at 100 concurrent runs that is about a fifth of each step's CPU.

:func:`tune_gc_for_server` is what such a process calls once its start-up is
done (modules imported, runtime composed): it collects what start-up left
behind, moves everything still alive into the collector's permanent
generation (``gc.freeze()``: never walked again) and raises the thresholds
(``gc.set_threshold(10000, 50, 100)`` by default). Reference cycles then live
a little longer before they are freed, which costs some memory, never
correctness. ``AVO_SERVER_GC`` changes it: ``off`` (or ``0``, ``false``,
``no``) leaves the collector as it is; one to three integers
(``AVO_SERVER_GC=20000,50,100``) set the thresholds instead of the default.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from avo.exceptions import ConfigError

ENV_VAR = "AVO_SERVER_GC"
DEFAULT_THRESHOLDS: tuple[int, int, int] = (10_000, 50, 100)
_OFF = frozenset({"off", "0", "false", "no"})
_ON = frozenset({"", "on", "1", "true", "yes"})

logger = logging.getLogger("avo.gc_tuning")


@dataclass(frozen=True)
class GcTuning:
    """What :func:`tune_gc_for_server` did: the thresholds before and after, objects frozen."""

    previous_thresholds: tuple[int, int, int]
    thresholds: tuple[int, int, int]
    frozen: int


def server_gc_thresholds(environ: Mapping[str, str] | None = None) -> tuple[int, int, int] | None:
    """The thresholds ``AVO_SERVER_GC`` asks for; None when it turns the tuning off.

    Raises :class:`~avo.exceptions.ConfigError` naming the value when it is
    neither on/off nor one to three non-negative integers with a positive first.
    """
    env = os.environ if environ is None else environ
    raw = env.get(ENV_VAR, "").strip()
    word = raw.lower()
    if word in _OFF:
        return None
    if word in _ON:
        return DEFAULT_THRESHOLDS
    parts = [part.strip() for part in raw.split(",")]
    try:
        numbers = [int(part) for part in parts]
    except ValueError:
        numbers = []
    if not 1 <= len(numbers) <= 3 or numbers[0] < 1 or any(n < 0 for n in numbers):
        raise ConfigError(
            f"{ENV_VAR}={raw!r}: give off, on, or one to three collector thresholds "
            "(e.g. 10000,50,100; the first at least 1)",
            key=ENV_VAR,
        )
    first, second, third = (*numbers, *DEFAULT_THRESHOLDS[len(numbers) :])
    return (first, second, third)


def tune_gc_for_server(environ: Mapping[str, str] | None = None) -> GcTuning | None:
    """Freeze the start-up heap and raise the collector's thresholds; None when turned off.

    Call it once a server process has started (and again after loading a large
    amount of long-lived state, if you like: each call freezes what is alive
    then). ``environ`` defaults to ``os.environ`` (see ``AVO_SERVER_GC`` above).
    """
    thresholds = server_gc_thresholds(environ)
    if thresholds is None:
        logger.debug("%s is off: the garbage collector is left as it is", ENV_VAR)
        return None
    previous = gc.get_threshold()
    gc.collect()  # what start-up left behind is freed, not frozen forever
    gc.freeze()
    gc.set_threshold(*thresholds)
    tuning = GcTuning(previous, thresholds, gc.get_freeze_count())
    logger.debug(
        "garbage collector tuned for a server: %d objects frozen, thresholds %s (were %s)",
        tuning.frozen,
        thresholds,
        previous,
    )
    return tuning


__all__ = [
    "DEFAULT_THRESHOLDS",
    "ENV_VAR",
    "GcTuning",
    "server_gc_thresholds",
    "tune_gc_for_server",
]
