"""Source of the test distribution ``avo-temporal-testloop`` (written into each test's tmp dir).

``loop`` is a fake model that is a function of its request (so any worker can
answer any run's step, before or after a crash): for task ``T`` it asks for
``append_line("T k")`` for k = 0 .. calls-1, one call per turn, then answers
``T done`` (after ``latency`` seconds per answer, like a real provider's;
streamed a character every ``char_delay`` seconds when asked to stream).
``append_line`` is a non-idempotent tool: it appends a line to a file (with
``delay`` seconds in the middle, a window to kill a worker in); ``tool``
names another tool for ``loop`` to call (an MCP server's ``lines__append_line``:
``avo_temporal_testmcp PATH DELAY`` serves the same tool over stdio), and a
request that does not offer that tool is answered ``T: no tool NAME offered``. With
``progress = N`` it first reports N steps (``avo.tool_progress``, from its
thread), ``pause`` seconds apart; after the first it waits for the file
``gate`` to exist, when one is set.
"""

MCP_SOURCE = """
import sys

from avo.tools import ToolRegistry
from avo_mcp.servers._stdio import serve
from avo_temporal_testloop import make_append

if __name__ == "__main__":
    path, delay = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "0"
    tool = make_append({"path": path, "delay": delay})
    raise SystemExit(serve(ToolRegistry([tool]), name="lines"))
"""

SOURCE = """
import asyncio
import time
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel

from avo.models import ModelResponse, TokenUsage, ToolCall, ToolEffect, ToolRisk
from avo.plugins import ProviderSpec, ToolSpec, provides
from avo.providers.streaming import ModelChunk, response_to_chunks
from avo.tool_progress import report_progress
from avo.tools import FunctionTool


class LoopProvider:
    name = "loop"
    model = "loop-1"

    def __init__(self, settings):
        self.calls = int(settings.get("calls", 3))
        self.latency = float(settings.get("latency", 0))
        self.char_delay = float(settings.get("char_delay", 0))
        self.tool = str(settings.get("tool", "append_line"))

    async def generate(self, request):
        if self.latency:  # a real provider's time to answer, without the CPU
            await asyncio.sleep(self.latency)
        task = next(m["content"] for m in request.messages if m.get("role") == "user")
        done = sum(1 for m in request.messages if m.get("role") == "tool")
        usage = TokenUsage(input_tokens=10, output_tokens=5)
        offered = [tool.name for tool in request.tools]
        if self.tool != "append_line" and self.tool not in offered:
            return ModelResponse(content=f"{task}: no tool {self.tool} offered", usage=usage)
        if done < self.calls:
            call = ToolCall(name=self.tool, arguments={"line": f"{task} {done}"})
            return ModelResponse(tool_calls=[call], usage=usage)
        return ModelResponse(content=f"{task} done", usage=usage)


    async def stream(self, request):
        for chunk in response_to_chunks(await self.generate(request)):
            if not chunk.text:
                yield chunk
                continue
            for char in chunk.text:
                yield ModelChunk(text=char)
                await asyncio.sleep(self.char_delay)
            yield replace(chunk, text="")


def make_provider(settings, environ=None):
    return LoopProvider(settings)


class Line(BaseModel):
    line: str


def make_append(settings):
    path = Path(settings["path"])
    delay = float(settings.get("delay", 0))
    steps = int(settings.get("progress", 0))
    pause = float(settings.get("pause", 0))
    gate = Path(settings["gate"]) if settings.get("gate") else None

    def report(line):
        for step in range(1, steps + 1):
            report_progress(step, steps, f"{line}: step {step}")
            if step == 1 and gate is not None:
                deadline = time.monotonic() + 120
                while not gate.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
            elif step < steps:
                time.sleep(pause)

    def append(args):
        report(args.line)
        with path.open("a", encoding="utf-8") as handle:
            if not delay:  # one write: a line is all there or not there
                handle.write(args.line + "\\n")
                return {"appended": args.line}
            handle.write(args.line)
            handle.flush()
            time.sleep(delay)
            handle.write("\\n")
        return {"appended": args.line}

    return FunctionTool(
        name="append_line",
        description="append a line to the file",
        arguments_model=Line,
        function=append,
        risk=ToolRisk.MODIFY,
        effect=ToolEffect.NON_IDEMPOTENT,
    )


provider = provides(ProviderSpec(name="loop", factory=make_provider, models=("loop-1",)))
tool = provides(
    ToolSpec(
        name="append_line",
        factory=make_append,
        risk=ToolRisk.MODIFY,
        effect=ToolEffect.NON_IDEMPOTENT,
    )
)
"""
