"""Span names and attribute keys (OpenTelemetry GenAI semantic conventions + avo.*)."""

from __future__ import annotations

RUN_SPAN = "avo.run"
TURN_SPAN = "avo.turn"
TOOL_SPAN_PREFIX = "execute_tool"  # GenAI convention: "execute_tool {gen_ai.tool.name}"

SYSTEM = "gen_ai.system"
OPERATION = "gen_ai.operation.name"
REQUEST_MODEL = "gen_ai.request.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"

RUN_ID = "avo.run_id"
STEP = "avo.step"
STATE = "avo.state"
STOP_REASON = "avo.stop_reason"
STEPS = "avo.steps"
COST_USD = "avo.cost_usd"
TOOL_SUCCESS = "avo.tool.success"
RESUMED = "avo.resumed"
EVENT_SEQUENCE = "avo.event.sequence"
TOTAL_INPUT_TOKENS = "avo.usage.input_tokens"
TOTAL_OUTPUT_TOKENS = "avo.usage.output_tokens"
