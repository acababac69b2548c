"""avo: an event-sourced agent runtime built as a plugin-based microkernel.

Public names are imported on first use so that ``import avo`` (and
``avo --version``) stay fast; ``__all__`` is the stable API.
"""

from __future__ import annotations

from avo.lazy import lazy_exports

# Not `from typing import TYPE_CHECKING`: importing typing costs more than the
# rest of `avo --version` (mypy treats this name like typing.TYPE_CHECKING).
TYPE_CHECKING = False

__version__ = "1.0.0"
_STABLE_ABI = "2.0.0"

_EXPORTS: dict[str, str] = {
    "AgentEvent": "avo.events",
    "AgentRuntime": "avo.runtime",
    "Checkpoint": "avo.models",
    "DeprecatedSymbol": "avo.deprecation",
    "EventType": "avo.events",
    "FakeProvider": "avo.providers.fake",
    "FunctionTool": "avo.tools",
    "LetheMemoryAdapter": "avo.memory",
    "LoopPolicy": "avo.policies",
    "MemoryProvider": "avo.memory",
    "ModelRequest": "avo.models",
    "ModelResponse": "avo.models",
    "OtelDisabledError": "avo.observability",
    "ProgressDetector": "avo.progress",
    "RunRecord": "avo.models",
    "RunResult": "avo.models",
    "RunState": "avo.state",
    "RunTrace": "avo.tracing",
    "ScriptItem": "avo.providers.fake",
    "StopReason": "avo.state",
    "TokenUsage": "avo.models",
    "Tool": "avo.tools",
    "ToolCall": "avo.models",
    "ToolMetadata": "avo.models",
    "ToolRegistry": "avo.tools",
    "ToolResult": "avo.models",
    "TraceEntry": "avo.tracing",
    "TraceInspector": "avo.tracing",
    "configure_tracer": "avo.observability",
    "deprecated": "avo.deprecation",
    "deprecation_index": "avo.deprecation",
    "is_enabled": "avo.observability",
    "span_for_turn": "avo.observability",
    "to_anthropic_tool": "avo.tools",
    "to_json_schema": "avo.tools",
    "to_openai_function": "avo.tools",
}

if TYPE_CHECKING:
    from avo.deprecation import DeprecatedSymbol, deprecated, deprecation_index
    from avo.events import AgentEvent, EventType
    from avo.memory import LetheMemoryAdapter, MemoryProvider
    from avo.models import (
        Checkpoint,
        ModelRequest,
        ModelResponse,
        RunRecord,
        RunResult,
        TokenUsage,
        ToolCall,
        ToolMetadata,
        ToolResult,
    )
    from avo.observability import OtelDisabledError, configure_tracer, is_enabled, span_for_turn
    from avo.policies import LoopPolicy
    from avo.progress import ProgressDetector
    from avo.providers.fake import FakeProvider, ScriptItem
    from avo.runtime import AgentRuntime
    from avo.state import RunState, StopReason
    from avo.tools import (
        FunctionTool,
        Tool,
        ToolRegistry,
        to_anthropic_tool,
        to_json_schema,
        to_openai_function,
    )
    from avo.tracing import RunTrace, TraceEntry, TraceInspector


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "AgentEvent",
    "AgentRuntime",
    "Checkpoint",
    "DeprecatedSymbol",
    "EventType",
    "FakeProvider",
    "FunctionTool",
    "LetheMemoryAdapter",
    "LoopPolicy",
    "MemoryProvider",
    "ModelRequest",
    "ModelResponse",
    "OtelDisabledError",
    "ProgressDetector",
    "RunRecord",
    "RunResult",
    "RunState",
    "RunTrace",
    "ScriptItem",
    "StopReason",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolMetadata",
    "ToolRegistry",
    "ToolResult",
    "TraceEntry",
    "TraceInspector",
    "configure_tracer",
    "deprecated",
    "deprecation_index",
    "is_enabled",
    "span_for_turn",
    "to_anthropic_tool",
    "to_json_schema",
    "to_openai_function",
]
