"""LoopPolicy bounds (steps, tokens, runtime, loops)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from avo.circuit_breaker import CircuitBreakerPolicy
from avo.models import TokenUsage
from avo.retry import RetryPolicy
from avo.state import StopReason


class LoopPolicy(BaseModel):
    """Bounds that stop a runaway run with a deterministic StopReason."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_steps: int = Field(default=20, gt=0)
    max_runtime_seconds: float | None = Field(default=300, gt=0)
    max_input_tokens: int | None = Field(default=None, gt=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    max_total_tokens: int | None = Field(default=None, gt=0)
    repeated_action_limit: int = Field(default=3, gt=0)
    consecutive_error_limit: int = Field(default=3, gt=0)
    no_progress_window: int = Field(default=5, gt=0)
    checkpoint_every_step: bool = True
    provider_timeout_seconds: float = Field(default=60, gt=0)
    tool_timeout_seconds: float = Field(default=60, gt=0)
    circuit_breaker: CircuitBreakerPolicy | None = None
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    """How a failed provider call is retried within a step (each retry is recorded);
    only a failure that exhausted its retries counts toward consecutive_error_limit."""
    max_parallel_tool_calls: int = Field(default=4, gt=0)
    """How many inspect-only tool calls of one model turn may run at once (1: one by one)."""
    continuation_turns: int = Field(default=2, ge=0)
    """How often a final answer cut off at the output-token limit is continued
    before the run stops with OUTPUT_TRUNCATED."""
    output_retries: int = Field(default=2, ge=0)
    """How often an answer that fails the run's output schema is sent back with the
    validation error before the run fails with INVALID_MODEL_RESPONSE."""
    on_tool_denied: Literal["continue", "stop"] = "continue"
    """A denied tool call: ``continue`` sends the reason back to the model as the
    call's result and the run goes on; ``stop`` ends the run (STOPPED / POLICY_DENIED)."""
    human_input_timeout_seconds: float | None = Field(default=None, gt=0)
    """How long a request for a person (an approval, a question) stays answerable
    once the run pauses for it; past it, resuming records the call as denied.
    None: requests never expire."""

    def token_budget_reason(
        self, usage: TokenUsage, *, accounting_available: bool
    ) -> StopReason | None:
        """TOKEN_BUDGET_EXCEEDED once any configured token cap is reached."""
        if not accounting_available:
            return None
        if self.max_input_tokens is not None and usage.input_tokens >= self.max_input_tokens:
            return StopReason.TOKEN_BUDGET_EXCEEDED
        if self.max_output_tokens is not None and usage.output_tokens >= self.max_output_tokens:
            return StopReason.TOKEN_BUDGET_EXCEEDED
        if self.max_total_tokens is not None and usage.total_tokens >= self.max_total_tokens:
            return StopReason.TOKEN_BUDGET_EXCEEDED
        return None

    def runtime_reason(self, elapsed_seconds: float) -> StopReason | None:
        """MAX_RUNTIME once ``elapsed_seconds >= max_runtime_seconds``."""
        if self.max_runtime_seconds is not None and elapsed_seconds >= self.max_runtime_seconds:
            return StopReason.MAX_RUNTIME
        return None


__all__ = ["LoopPolicy"]
