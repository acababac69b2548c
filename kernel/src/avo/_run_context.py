"""The mutable per-run state the handlers share (internal)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import JsonValue

from avo.approval import HumanRequest
from avo.events import AgentEvent, RunLogState
from avo.models import Checkpoint, ModelResponse, RunRecord, ToolCall, ToolResult
from avo.policies import LoopPolicy
from avo.progress import ProgressDetector, history_limit_for
from avo.state import RunState


@dataclass(eq=False)
class _RunContext:
    """One run being driven: its head, its log summary and the loop's working state."""

    run: RunRecord
    log: RunLogState
    policy: LoopPolicy
    messages: list[dict[str, JsonValue]]
    started_at: datetime
    next_step: int = 1
    detector: ProgressDetector = field(default_factory=ProgressDetector)
    completed_tool_call_ids: set[str] = field(default_factory=set)
    consecutive_errors: int = 0
    last_input_tokens: int = 0
    pending_response: ModelResponse | None = None
    # The open tool-call batch (the pending response's calls, in the model's order;
    # a PRE_TOOL_USE hook may have replaced a call with a copy holding new
    # arguments), each call's durable result, and the transcript text of a call
    # that got none (denied). Folded into the transcript when the batch closes.
    calls: list[ToolCall] = field(default_factory=list)
    results: dict[str, ToolResult] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)
    # Failed provider attempts since the last response (retries within a step),
    # and the last error a provider or a tool reported (named when errors stop a run).
    # Every tool-call id the run has given out (rebuilt from the log on resume).
    call_ids_seen: set[str] = field(default_factory=set)
    provider_attempts: int = 0
    last_error: str | None = None
    # A truncated answer being continued, and the turns used; answers the output
    # schema refused so far; the schema (a pydantic model) and its parsed answer.
    partial_output: str | None = None
    continuation_turns: int = 0
    output_retries: int = 0
    output_model: Any = None
    output_schema: dict[str, JsonValue] | None = None
    parsed: Any = None
    # This turn's approval step (avo.runtime_approval): calls approved so far, requests
    # for a person by call id, and the answers recorded to them.
    approved: set[str] = field(default_factory=set)
    asked: dict[str, HumanRequest] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Pre-tool hooks run once per call and turn; on resume, the arguments a hook gave
    # (from the log) by call id, and the calls whose hooks must run again (the log
    # masked a secret in the arguments they gave).
    hook_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    hooks_again: set[str] = field(default_factory=set)

    policy_json: dict[str, Any] = field(default_factory=dict)
    # The write buffer (see avo.runtime_persistence.flush): events validated and
    # folded into ``log`` but not yet stored, each with the run head or the
    # checkpoint it carries; ``unsynced`` after a flush failed midway.
    pending: list[tuple[AgentEvent, RunRecord | None, Checkpoint | None]] = field(
        default_factory=list
    )
    pending_checkpoint: Checkpoint | None = None
    unsynced: bool = False
    # The store's append_batch (None: replay through the single-event methods),
    # and whether ``run`` is a head object no one outside the buffer has seen.
    batch: Any = None
    head_private: bool = False
    # The redacted (tool_call_id, name, arguments) payload of the turn's call (with the
    # call object it was made from); of every call by id when the turn has several.
    call_payload: tuple[ToolCall, dict[str, Any]] | None = None
    call_payloads: dict[str, tuple[ToolCall, dict[str, Any]]] = field(default_factory=dict)
    # The last checkpoint's copy of completed_tool_call_ids (reused while unchanged).
    completed_snapshot: set[str] | None = None
    # The last copy of ``messages`` handed out (a checkpoint's, a model request's),
    # shared by the next one while the transcript is unchanged.
    messages_snapshot: list[dict[str, JsonValue]] | None = None
    # Hook / observer faults already reported for this run (avo._hook_faults).
    reported_faults: set[tuple[str, str, str]] = field(default_factory=set)
    # The request seam (avo._seam.RunSeam) when the run has shapers, else None, and
    # the session the run belongs to.
    seam: Any = None
    session_id: str | None = None
    # The transcript holds images or documents (avo._media prepares each request).
    media: bool = False
    # The run's id, read once (it never changes; a plain attribute is read ~20 times a step).
    run_id: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.run_id = self.run.run_id
        if not self.policy_json:
            self.policy_json = self.policy.model_dump(mode="json")
        needed = history_limit_for(
            self.policy.repeated_action_limit, self.policy.no_progress_window
        )
        self.detector.history_limit = max(self.detector.history_limit, needed)

    def transcript(self) -> list[dict[str, JsonValue]]:
        """A copy of ``messages`` for a checkpoint or a model request, shared while unchanged.

        The transcript only grows (messages are appended, or inserted before the
        last one), so an equal length and the same last message mean no change:
        a step's request reuses its last checkpoint's copy instead of copying
        the whole history a third time.
        """
        messages = self.messages
        snapshot = self.messages_snapshot
        if (
            snapshot is None
            or len(snapshot) != len(messages)
            or (messages and snapshot[-1] is not messages[-1])
        ):
            snapshot = self.messages_snapshot = list(messages)
        return snapshot

    def completed_ids(self) -> set[str]:
        """A copy of ``completed_tool_call_ids`` for a checkpoint, shared while unchanged.

        Ids are only ever added, so an equal size means an equal set.
        """
        snapshot = self.completed_snapshot
        if snapshot is None or len(snapshot) != len(self.completed_tool_call_ids):
            snapshot = self.completed_snapshot = set(self.completed_tool_call_ids)
        return snapshot

    @property
    def state(self) -> RunState:
        """The run's current state."""
        return self.run.state
