"""What crosses between a workflow and its activities: JSON, and avo errors by class name.

Activities take and return plain JSON (pydantic models dumped in JSON mode),
so the workflow history holds readable data and any worker can read any
other's. An avo error raised in an activity crosses as a non-retryable
``ApplicationError`` whose type is the error's class name and whose details
carry its attributes; :func:`error_from` rebuilds it on the workflow side so
the kernel's handlers see the same exception the in-process runtime would.
"""

from __future__ import annotations

import inspect
from typing import Any

from avo import exceptions
from avo.exceptions import AvoError

UNKNOWN_OUTCOME = "ToolOutcomeUnknownError"
"""The error type of a tool activity that cannot tell whether its call took effect."""

WRITES_FAILED = "avo.store_writes_refused"
"""The error type of an activity whose run's pending store writes the store refused."""

_ATTRIBUTES = ("retryable", "retry_after", "status_code", "run_id", "tool_call_id", "tool_name")


def dump(model: Any) -> Any:
    """A pydantic model (or a list of them, or None) as JSON data."""
    if model is None:
        return None
    if isinstance(model, list | tuple):
        return [dump(item) for item in model]
    return model.model_dump(mode="json")


def load(cls: Any, data: Any) -> Any:
    """``cls`` from :func:`dump`'s output (a list stays a list, None stays None)."""
    if data is None:
        return None
    if isinstance(data, list):
        return [cls.model_validate(item) for item in data]
    return cls.model_validate(data)


def application_error(exc: AvoError) -> Any:
    """``exc`` as a non-retryable ApplicationError the workflow turns back into ``exc``.

    Non-retryable: the kernel decides about retries itself (a provider error
    goes through the run's retry policy, with durable timers in a workflow).
    """
    from temporalio.exceptions import ApplicationError

    details = {name: getattr(exc, name) for name in _ATTRIBUTES if hasattr(exc, name)}
    return ApplicationError(str(exc), details, type=type(exc).__name__, non_retryable=True)


def error_from(failure: BaseException) -> BaseException:
    """The avo error an activity failure carries, or ``failure`` itself when it carries none."""
    from temporalio.exceptions import ActivityError, ApplicationError

    cause = failure.cause if isinstance(failure, ActivityError) else failure
    if not isinstance(cause, ApplicationError) or not cause.type:
        return failure
    cls = getattr(exceptions, cause.type, None)
    if not (isinstance(cls, type) and issubclass(cls, AvoError)):
        return failure
    details = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
    accepted = inspect.signature(cls.__init__).parameters
    kwargs = {key: value for key, value in details.items() if key in accepted}
    try:
        return cls(cause.message, **kwargs)
    except TypeError:
        return AvoError(cause.message)


__all__ = ["UNKNOWN_OUTCOME", "WRITES_FAILED", "application_error", "dump", "error_from", "load"]
