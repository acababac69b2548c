"""A model that acts from what it is sent, so runs can be long, compacted and resumed."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel

from avo import FunctionTool, ModelResponse, ToolCall
from avo.models import ModelRequest, TokenUsage

FILLER = "lorem ipsum dolor sit amet " * 36  # ~970 characters: ~240 tokens


class ChunkArgs(BaseModel):
    """Which chunk to read."""

    n: int


def chunk_text(n: int) -> str:
    """What read_chunk returns for chunk ``n``."""
    return f"chunk {n}: secret-{n * 7} {FILLER}"


def chunk_tool() -> FunctionTool[ChunkArgs]:
    """``read_chunk(n)``: a large, recognisable output."""
    return FunctionTool(
        name="read_chunk",
        description="Read one chunk.",
        arguments_model=ChunkArgs,
        function=lambda args: chunk_text(args.n),
    )


class Reader:
    """Reads chunks 0..total-1, recalls chunk ``recall_at``'s output once elided, then answers.

    It decides from the request alone (the last tool result it was sent), so it
    behaves the same after a resume. Summary requests are answered with a
    summary naming the chunks it was shown.
    """

    name = "reader"
    model = "reader-1"

    def __init__(self, total: int, *, recall_at: int | None = None, fail_summary: bool = False):
        self.total = total
        self.recall_at = recall_at
        self.fail_summary = fail_summary
        self.requests: list[ModelRequest] = []
        self.summaries = 0
        self.recalled: str | None = None

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        usage = TokenUsage(input_tokens=10, output_tokens=5)
        first = str(request.messages[0].get("content", ""))
        if first.startswith("You compact the history"):
            self.summaries += 1
            if self.fail_summary:
                raise RuntimeError("summary model is down")
            seen = sorted(set(re.findall(r"chunk (\d+):", str(request.messages[-1]["content"]))))
            return ModelResponse(content=f"Read chunks {', '.join(seen)} so far.", usage=usage)
        last = request.messages[-1]
        if last.get("role") != "tool":
            return self._next(0, usage)
        content = str(last.get("content", ""))
        if content.startswith("Recalled output of read_chunk"):
            self.recalled = content
        n = _last_chunk(request)
        if self.recall_at is not None and self.recalled is None and n >= self.recall_at + 6:
            stub = re.search(r'recall with id "([^"]+)"', _stub_for(request))
            if stub is not None:
                return ModelResponse(
                    tool_call=ToolCall(name="recall", arguments={"id": stub.group(1)}), usage=usage
                )
        return self._next(n + 1, usage)

    def _next(self, n: int, usage: TokenUsage) -> ModelResponse:
        if n >= self.total:
            return ModelResponse(content=f"read {self.total} chunks", usage=usage)
        return ModelResponse(tool_call=ToolCall(name="read_chunk", arguments={"n": n}), usage=usage)


def _last_chunk(request: ModelRequest) -> int:
    """The highest chunk number the model has asked for so far (from its own calls)."""
    highest = -1
    for message in request.messages:
        for call in message.get("tool_calls") or ():
            function = call["function"]
            if function["name"] == "read_chunk":
                highest = max(highest, int(json.loads(function["arguments"])["n"]))
    if highest < 0:  # the calls were summarised away: the summary names the chunks
        found = re.findall(
            r"chunk[s]? ([\d, ]+)", " ".join(str(m.get("content")) for m in request.messages)
        )
        numbers = [int(n) for group in found for n in re.findall(r"\d+", group)]
        highest = max(numbers, default=-1)
    return highest


def _stub_for(request: ModelRequest) -> str:
    return "\n".join(
        str(m.get("content"))
        for m in request.messages
        if m.get("role") == "tool" and "elided" in str(m.get("content"))
    )
