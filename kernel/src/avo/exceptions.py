"""The avo error hierarchy: every error avo raises is an ``AvoError``.

::

    AvoError
    ├── InvalidStateTransitionError
    ├── RunNotFoundError
    ├── RunAlreadyTerminalError
    ├── CheckpointNotFoundError
    ├── UnsafeResumeError
    ├── DuplicateToolError
    ├── ToolNotFoundError
    ├── ToolValidationError
    ├── ToolExecutionError          (aliases: NotifierError, SandboxError, MCPError, SkillError)
    ├── ToolAlreadyCompletedError
    ├── ToolOutcomeUnknownError     (a call may or may not have acted: a person decides)
    ├── ToolInputRequiredError      (a tool needs a person's answer: the run asks, then reruns it)
    ├── StorageError
    │   ├── EventInvariantError
    │   │   └── StaleWriteError     (a batch built from an out-of-date view of the run)
    │   └── LeaseError              (another writer holds the run)
    │       └── RunBusyError        (a live process is driving the run: .owner)
    ├── ProviderError(message, *, retryable=True, retry_after=None, status_code=None)
    │   └── FakeProviderExhaustedError   (retryable=False)
    ├── OutputSchemaError           (a final answer does not match run(output_schema=...))
    ├── ConfigError                 (also a ValueError)
    ├── PluginError
    │   ├── PluginConflictError     (two packages claim one name)
    │   └── BundleError             (a bundle's per-run setup failed)
    ├── ShapingError                (a request shaper failed: the request is not sent)
    ├── ContextWindowError          (a request cannot be made to fit the model's window)
    ├── SessionError                (an unknown, busy or unusable session)
    ├── SteeringError               (a message for a run that is not working here)
    ├── OptionalDependencyError     (a name whose implementation lives in a plugin)
    ├── HookError                   (a hook executor got no decision: crash, timeout, ...)
    ├── ApprovalError               (an answer to a paused run that cannot be recorded)
    ├── MemoryStoreError            (a long-term memory store failed or was misconfigured)
    ├── ContentNotSupportedError    (an image or document the model cannot be shown)
    ├── CredentialError             (a stored API key that cannot be read, written or removed)
    └── EngineError                 (an execution engine is unreachable or refused a run)
        └── EngineRunGoneError      (the engine no longer drives the run: nothing to signal)

Context is carried as attributes (``.run_id``, ``.plugin``, ``.tool_name``) so
callers never parse messages. The CLI prints ``avo: {message}`` and exits 2
for any ``AvoError``.
"""

from __future__ import annotations


class AvoError(Exception):
    """Root of every error avo raises."""


class InvalidStateTransitionError(AvoError):
    """A state transition the transition table forbids."""


class RunNotFoundError(AvoError):
    """No run with the given id exists in the store."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class RunAlreadyTerminalError(AvoError):
    """The run already reached a terminal state."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class CheckpointNotFoundError(AvoError):
    """The run has no checkpoint to resume from."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class UnsafeResumeError(AvoError):
    """Resuming could repeat or hide a tool effect, so it is refused."""

    def __init__(
        self,
        message: str,
        *,
        run_id: str | None = None,
        tool_call_ids: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.tool_call_ids = tool_call_ids


class DuplicateToolError(AvoError):
    """Two tools with one name were registered."""

    def __init__(self, message: str, *, tool_name: str | None = None) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ToolNotFoundError(AvoError):
    """The model asked for a tool that is not registered."""

    def __init__(self, message: str, *, tool_name: str | None = None) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ToolValidationError(AvoError):
    """Tool arguments failed validation against the arguments model."""

    def __init__(self, message: str, *, tool_name: str | None = None) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ToolExecutionError(AvoError):
    """A tool raised while running."""

    def __init__(self, message: str, *, tool_name: str | None = None) -> None:
        super().__init__(message)
        self.tool_name = tool_name


NotifierError = ToolExecutionError
SandboxError = ToolExecutionError
MCPError = ToolExecutionError
SkillError = ToolExecutionError


class ToolAlreadyCompletedError(AvoError):
    """The tool call already has a durable result (idempotency guard)."""

    def __init__(self, message: str, *, tool_call_id: str | None = None) -> None:
        super().__init__(message)
        self.tool_call_id = tool_call_id


class ToolOutcomeUnknownError(AvoError):
    """Nobody can tell whether a tool call took effect (the worker running it died mid-call).

    Raised by a tool invocation (an engine's remote dispatch, a remote tool whose
    connection dropped); the run then pauses for a person instead of running the
    call again: approving runs it again, denying records it as failed.
    """

    def __init__(
        self, message: str, *, tool_call_id: str | None = None, tool_name: str | None = None
    ) -> None:
        super().__init__(message)
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name


class ToolInputRequiredError(AvoError):
    """A tool cannot finish without a person's answer (an MCP server's elicitation).

    Raised by a tool invocation after it stopped short of acting; the run asks
    ``question`` (a question request; ``schema``, if given, is the JSON-schema
    object the answer must fit), pauses, and runs the call again once someone
    answered: the tool reads the answer with :func:`avo.tools.tool_input`.
    """

    def __init__(
        self,
        message: str,
        *,
        question: str,
        schema: dict[str, object] | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
    ) -> None:
        super().__init__(message)
        self.question = question
        self.schema = schema
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name


class StorageError(AvoError):
    """The event store failed or holds data it cannot read."""


class EventInvariantError(StorageError):
    """An append would break one of the event invariants."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class StaleWriteError(EventInvariantError):
    """A batch numbered from an out-of-date view of the run: another writer appended since.

    Refused inside the store's write, before anything of the batch is stored.
    """


class LeaseError(StorageError):
    """Another writer holds the run's lease (or this writer's lease was fenced off)."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class RunBusyError(LeaseError):
    """The run is being driven by another live process right now; ``.owner`` names it."""

    def __init__(self, message: str, *, run_id: str | None = None, owner: str = "") -> None:
        super().__init__(message, run_id=run_id)
        self.owner = owner


class ProviderError(AvoError):
    """A model provider failed. ``retryable`` says whether trying again can help.

    ``retry_after`` is the seconds the vendor asked to wait before trying again
    (an HTTP ``Retry-After``), ``status_code`` the HTTP status, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = True,
        retry_after: float | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status_code = status_code


class OutputSchemaError(AvoError):
    """A final answer does not match the output schema the run was given.

    The run loop sends the error back to the model (``LoopPolicy.output_retries``
    times) before failing the run with INVALID_MODEL_RESPONSE.
    """


class FakeProviderExhaustedError(ProviderError):
    """The FakeProvider's script has no more items."""

    def __init__(self, message: str = "FakeProvider script is exhausted") -> None:
        super().__init__(message, retryable=False)


class ConfigError(AvoError, ValueError):
    """Configuration (env vars, avo.toml, CLI flags) is invalid."""

    def __init__(self, message: str, *, key: str | None = None, file: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.file = file


class PluginError(AvoError):
    """A plugin could not be discovered, loaded or used."""

    def __init__(
        self,
        message: str,
        *,
        plugin: str | None = None,
        package: str | None = None,
    ) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.package = package


class PluginConflictError(PluginError):
    """Two distributions registered the same name in one plugin kind."""


class BundleError(PluginError):
    """A plugin bundle could not set up its tools, shapers or hooks for a run."""


class ShapingError(AvoError):
    """A request shaper raised or returned something unusable; the request was not sent."""

    def __init__(self, message: str, *, shaper: str | None = None) -> None:
        super().__init__(message)
        self.shaper = shaper


class ContextWindowError(AvoError):
    """A request does not fit the model's context window and cannot be made to."""

    def __init__(self, message: str, *, tokens: int = 0, window: int = 0) -> None:
        super().__init__(message)
        self.tokens = tokens
        self.window = window


class SessionError(AvoError):
    """A session that does not exist, is busy, or that the store cannot keep."""

    def __init__(self, message: str, *, session_id: str | None = None) -> None:
        super().__init__(message)
        self.session_id = session_id


class SteeringError(AvoError):
    """A steering message for a run that is not working in this process."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class OptionalDependencyError(AvoError, ImportError):
    """A public name whose implementation ships in a plugin that is not installed."""


class HookError(AvoError):
    """A hook executor could not get a decision (it crashed, timed out, was
    unreachable or replied with something that is not a decision).

    Raised inside a hook, it is a fault: a PRE_TOOL_USE guard then fails closed.
    """

    def __init__(self, message: str, *, hook: str | None = None) -> None:
        super().__init__(message)
        self.hook = hook


class ApprovalError(AvoError):
    """An answer to a paused run that cannot be recorded: no such request, already
    answered, expired, or the run is not paused."""

    def __init__(
        self, message: str, *, run_id: str | None = None, tool_call_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.tool_call_id = tool_call_id


class MemoryStoreError(AvoError):
    """A long-term memory store could not recall, remember, list or forget.

    Also raised for a memory or embedding configuration that cannot work (an
    embedding provider that returns vectors of the wrong size, say).
    """

    def __init__(self, message: str, *, provider: str | None = None) -> None:
        super().__init__(message)
        self.provider = provider


class ContentNotSupportedError(AvoError):
    """An image or document was given to a model that cannot take it (refused before
    anything is recorded). ``.provider`` and ``.model`` name who cannot; ``.kind`` is
    what was refused (``image``, ``document``, ``image URL``...)."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.kind = kind


class CredentialError(AvoError):
    """A stored API key could not be read, written or removed (``.provider`` names it).
    Its message never contains the key."""

    def __init__(self, message: str, *, provider: str | None = None) -> None:
        super().__init__(message)
        self.provider = provider


class EngineError(AvoError):
    """An execution engine (``avo.engines``) is unreachable, misconfigured or refused a run."""

    def __init__(
        self, message: str, *, engine: str | None = None, run_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.engine = engine
        self.run_id = run_id


class EngineRunGoneError(EngineError):
    """The engine has no driver for the run any more (e.g. its Temporal workflow was
    terminated before the run ended), so a signal reaches no one.

    Nobody writes the run's log then: :func:`avo.ops.cancel` ends such a run
    in the store itself, as it cancels an in-process run whose process died.
    """


__all__ = [
    "ApprovalError",
    "AvoError",
    "BundleError",
    "CheckpointNotFoundError",
    "ConfigError",
    "ContentNotSupportedError",
    "ContextWindowError",
    "CredentialError",
    "DuplicateToolError",
    "EngineError",
    "EngineRunGoneError",
    "EventInvariantError",
    "FakeProviderExhaustedError",
    "HookError",
    "InvalidStateTransitionError",
    "LeaseError",
    "MCPError",
    "MemoryStoreError",
    "NotifierError",
    "OptionalDependencyError",
    "OutputSchemaError",
    "PluginConflictError",
    "PluginError",
    "ProviderError",
    "RunAlreadyTerminalError",
    "RunBusyError",
    "RunNotFoundError",
    "SandboxError",
    "SessionError",
    "ShapingError",
    "SkillError",
    "StaleWriteError",
    "SteeringError",
    "StorageError",
    "ToolAlreadyCompletedError",
    "ToolExecutionError",
    "ToolInputRequiredError",
    "ToolNotFoundError",
    "ToolOutcomeUnknownError",
    "ToolValidationError",
    "UnsafeResumeError",
]
