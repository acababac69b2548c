"""Whether the optional ``avo_native`` accelerator is loaded in this process.

The public face of :mod:`avo._native` for front ends and plugins (``avo
doctor`` prints :func:`status`'s line). Loaded or not, every result is the
same; only some canonical-JSON, fingerprint and redaction work is faster.
"""

from __future__ import annotations

from dataclasses import dataclass

from avo import _native


@dataclass(frozen=True)
class NativeStatus:
    """The accelerator's state: loaded (with its version and functions) or why not."""

    loaded: bool
    version: str | None
    functions: tuple[str, ...]
    reason: str | None

    def describe(self) -> str:
        """One line: ``loaded (avo_native 0.1.4: 6 functions)`` or ``not loaded (why)``."""
        if self.loaded:
            return f"loaded (avo_native {self.version}: {len(self.functions)} functions)"
        return f"not loaded ({self.reason}); results are the same, only slower"


def status() -> NativeStatus:
    """The accelerator's state in this process."""
    if _native.is_available():
        return NativeStatus(True, _native.version(), tuple(_native.functions()), None)
    error = _native.import_error()
    if _native.is_disabled():
        reason = str(error)
    elif isinstance(error, ModuleNotFoundError) and error.name == "avo_native":
        reason = "avo_native is not installed; `pip install ./native` in avo's source builds it"
    else:
        reason = f"avo_native failed to load: {error}"
    return NativeStatus(False, None, (), reason)


__all__ = ["NativeStatus", "status"]
