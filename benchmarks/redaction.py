"""Redaction overhead: scrubbing event payloads vs serializing them.

The runtime passes every event payload through ``AgentRuntime.redactor`` before
the store sees it. This measures that cost on typical payloads (a
MODEL_RESPONDED with a tool call, a TOOL_COMPLETED with a 2 KB output, a
STATE_CHANGED) against ``json.dumps`` of the same payload, which every store
does anyway. Printed as a ratio so it is comparable across machines.
Target: redaction within 2x of json.dumps.

Run: python benchmarks/redaction.py
"""

from __future__ import annotations

import json
import time

from avo.redaction import Redactor

PAYLOADS = {
    "model_responded": {
        "step": 3,
        "response": {
            "response_id": "r-1",
            "content": None,
            "tool_call": {"tool_call_id": "c-1", "name": "grep", "arguments": {"pattern": "def "}},
            "usage": {"input_tokens": 1200, "output_tokens": 40},
        },
        "duration_ms": 812.4,
        "token_accounting_available": True,
        "usage": {"input_tokens": 1200, "output_tokens": 40},
        "provider": "anthropic",
        "model": "claude-sonnet-4-6",
    },
    "tool_completed": {
        "tool_call_id": "c-1",
        "name": "grep",
        "success": True,
        "duration_ms": 3.2,
        "result": {
            "tool_call_id": "c-1",
            "tool_name": "grep",
            "success": True,
            "output": {"matches": ["src/app.py:12: def handler(request):" for _ in range(50)]},
            "error": None,
        },
    },
    "state_changed": {"from_state": "model_pending", "to_state": "decision_received"},
}


def best_of(fn, payload, *, repeat: int = 5, number: int = 2000) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(payload)
        best = min(best, (time.perf_counter() - start) / number)
    return best


def main() -> None:
    redactor = Redactor(environ={"AVO_ANTHROPIC_API_KEY": "sk-ant-bench-0123456789"})
    print("redaction: Redactor.value(payload) vs json.dumps(payload) (best of 5)")
    print(f"{'payload':<18} {'json µs':>9} {'redact µs':>10} {'ratio':>7}")
    worst = 0.0
    for name, payload in PAYLOADS.items():
        base = best_of(json.dumps, payload) * 1e6
        cost = best_of(redactor.value, payload) * 1e6
        worst = max(worst, cost / base)
        print(f"{name:<18} {base:>9.1f} {cost:>10.1f} {cost / base:>6.2f}x")
    print(f"worst ratio redact/json: {worst:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
