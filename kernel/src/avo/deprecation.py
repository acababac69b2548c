"""Mark public symbols deprecated, and list every symbol so marked.

::

    @deprecated(since="1.1", removal="2.0", replacement="avo.new_thing")
    def old_thing(): ...

Calling ``old_thing`` warns with a :class:`DeprecationWarning` naming the
replacement. With ``strict=True`` a call made once the running kernel version
reaches ``removal`` raises :class:`DeprecatedSymbol` instead, so a removal
cannot be forgotten. :func:`deprecation_index` lists every decorated symbol
(this is how docs and the "hooks only grow" rule check themselves).
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from avo.exceptions import AvoError

_T = TypeVar("_T")
_VERSION = re.compile(r"^\d+(\.\d+)*")
KERNEL_DISTRIBUTION = "avo-kernel"


class DeprecatedSymbol(AvoError):
    """A strictly deprecated symbol was used at or after its removal version."""

    def __init__(self, message: str, *, symbol: str, removal: str) -> None:
        super().__init__(message)
        self.symbol = symbol
        self.removal = removal


@dataclass(frozen=True)
class DeprecationInfo:
    """One entry of :func:`deprecation_index`."""

    symbol: str
    since: str
    removal: str
    replacement: str | None
    strict: bool

    def message(self) -> str:
        """The warning text for this symbol."""
        text = (
            f"{self.symbol} is deprecated since {self.since} and will be removed in {self.removal}"
        )
        return text + (f"; use {self.replacement} instead." if self.replacement else ".")


_INDEX: dict[str, DeprecationInfo] = {}


def _parse(version: str) -> tuple[int, ...]:
    match = _VERSION.match(version.strip())
    if match is None:
        raise ValueError(f"not a dotted version: {version!r} (expected e.g. '1.2' or '2.0.0')")
    parts = [int(p) for p in match.group(0).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def kernel_version() -> str:
    """The installed avo-kernel version ("0" when the distribution metadata is missing)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(KERNEL_DISTRIBUTION)
    except PackageNotFoundError:
        return "0"


def deprecated(
    *,
    since: str,
    removal: str,
    replacement: str | None = None,
    strict: bool = False,
    current_version: Callable[[], str] = kernel_version,
) -> Callable[[_T], _T]:
    """Decorate a function or class as deprecated.

    ``current_version`` returns the running version (injectable for tests).
    """
    if _parse(removal) <= _parse(since):
        raise ValueError(f"removal version {removal!r} must come after since={since!r}")

    def decorate(obj: _T) -> _T:
        symbol = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
        info = DeprecationInfo(symbol, since, removal, replacement, strict)
        _INDEX[symbol] = info

        def check() -> None:
            if strict and _parse(current_version()) >= _parse(removal):
                raise DeprecatedSymbol(
                    f"{symbol} was removed in {removal}"
                    + (f"; use {replacement} instead." if replacement else "."),
                    symbol=symbol,
                    removal=removal,
                )
            warnings.warn(info.message(), DeprecationWarning, stacklevel=3)

        if isinstance(obj, type):
            original_init = obj.__init__  # type: ignore[misc]

            @functools.wraps(original_init)
            def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
                check()
                original_init(self, *args, **kwargs)

            obj.__init__ = __init__  # type: ignore[misc]
            obj.__deprecated__ = info  # type: ignore[attr-defined]
            return obj
        if not callable(obj):
            raise TypeError(f"@deprecated needs a function or class, got {obj!r}")
        func = cast(Callable[..., Any], obj)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            check()
            return func(*args, **kwargs)

        wrapper.__deprecated__ = info  # type: ignore[attr-defined]
        return cast(_T, wrapper)

    return decorate


def deprecation_index() -> list[DeprecationInfo]:
    """Every symbol decorated with :func:`deprecated`, sorted by name."""
    return [_INDEX[name] for name in sorted(_INDEX)]


__all__ = [
    "DeprecatedSymbol",
    "DeprecationInfo",
    "deprecated",
    "deprecation_index",
    "kernel_version",
]
