"""Streaming-core benchmark: what assembling a streamed response costs.

Every figure is printed next to a baseline measured in the same run, as a
ratio, so the numbers mean something on any machine:

* StreamAssembler over N text chunks vs. the bare minimum (list.append of
  each fragment, then one join) — the overhead of the lossless assembler;
* StreamAssembler over a tool call whose arguments arrive in N fragments vs.
  the same join + json.loads;
* ThinkingStreamParser over N chunks vs. split_thinking on the joined text;
* response_to_chunks + StreamAssembler.build for one response vs. building
  the ModelResponse directly (the per-step cost when the runtime streams a
  non-streaming provider).

Run: python benchmarks/streaming.py [--quick]
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

from avo.models import ModelResponse, TokenUsage, ToolCall
from avo.providers.streaming import (
    ModelChunk,
    StreamAssembler,
    ThinkingStreamParser,
    response_to_chunks,
    split_thinking,
)


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _row(label: str, seconds: float, baseline: float, per: int) -> None:
    print(
        f"  {label:<48} {seconds / per * 1e6:8.3f} µs/item   "
        f"baseline {baseline / per * 1e6:8.3f} µs/item   ratio {seconds / baseline:5.2f}x"
    )


def main() -> None:
    quick = "--quick" in sys.argv
    repeat = 3 if quick else 15
    n = 2_000 if quick else 20_000

    fragments = [f"tok{i % 97} " for i in range(n)]
    text_chunks = [ModelChunk(text=fragment) for fragment in fragments]

    def assemble_text() -> object:
        assembler = StreamAssembler()
        for chunk in text_chunks:
            assembler.feed(chunk)
        return assembler.build()

    def baseline_text() -> object:
        parts: list[str] = []
        for chunk in text_chunks:
            parts.append(chunk.text)
        return ModelResponse(content="".join(parts))

    arguments = json.dumps({"items": [{"k": i, "v": "x" * 5} for i in range(n // 10)]})
    step = max(1, len(arguments) // n)
    arg_pieces = [arguments[i : i + step] for i in range(0, len(arguments), step)]
    call_chunks = [ModelChunk(tool_call_delta={"index": 0, "id": "c1", "name": "bulk"})]
    call_chunks += [ModelChunk(tool_call_delta={"arguments": piece}) for piece in arg_pieces]

    def assemble_call() -> object:
        assembler = StreamAssembler()
        for chunk in call_chunks:
            assembler.feed(chunk)
        return assembler.build()

    def baseline_call() -> object:
        parts: list[str] = []
        for chunk in call_chunks[1:]:
            delta = chunk.tool_call_delta
            assert delta is not None
            parts.append(str(delta["arguments"]))
        parsed = json.loads("".join(parts))
        return ModelResponse(tool_call=ToolCall(tool_call_id="c1", name="bulk", arguments=parsed))

    thinking = "<think>" + "".join(fragments[: n // 2]) + "</think>" + "".join(fragments[n // 2 :])
    think_pieces = [thinking[i : i + 7] for i in range(0, len(thinking), 7)]

    def parse_stream() -> object:
        parser = ThinkingStreamParser()
        out: list[tuple[str, str]] = []
        for piece in think_pieces:
            out.extend(parser.feed(piece))
        out.extend(parser.flush())
        return out

    def parse_whole() -> object:
        return split_thinking("".join(think_pieces))

    response = ModelResponse(
        tool_call=ToolCall(name="read_file", arguments={"path": "src/app.py", "limit": 200}),
        usage=TokenUsage(input_tokens=1200, output_tokens=40),
    )
    rounds = n // 10

    def round_trips() -> object:
        for _ in range(rounds):
            assembler = StreamAssembler()
            for chunk in response_to_chunks(response):
                assembler.feed(chunk)
            assembler.build()
        return None

    def direct_builds() -> object:
        for _ in range(rounds):
            ModelResponse(
                response_id=response.response_id,
                tool_call=ToolCall(
                    tool_call_id="c", name="read_file", arguments={"path": "src/app.py"}
                ),
                usage=TokenUsage(input_tokens=1200, output_tokens=40),
            )
        return None

    print(f"streaming core, best of {repeat} (n = {n})")
    _row(
        f"StreamAssembler, {len(text_chunks)} text chunks",
        _best(assemble_text, repeat),
        _best(baseline_text, repeat),
        len(text_chunks),
    )
    _row(
        f"StreamAssembler, tool call in {len(call_chunks)} deltas",
        _best(assemble_call, repeat),
        _best(baseline_call, repeat),
        len(call_chunks),
    )
    _row(
        f"ThinkingStreamParser, {len(think_pieces)} chunks",
        _best(parse_stream, repeat),
        _best(parse_whole, repeat),
        len(think_pieces),
    )
    _row(
        f"response_to_chunks + build, {rounds} responses",
        _best(round_trips, repeat),
        _best(direct_builds, repeat),
        rounds,
    )


if __name__ == "__main__":
    main()
