"""Worker process of test_long_run_compaction: run or resume the 300-chunk task.

``python long_run_worker.py run|resume DB BASE_URL RUN_ID`` prints the run's
result as JSON. The model is the real ``openai`` adapter at ``BASE_URL``; the
store is SQLite at ``DB``; the compaction bundle keeps requests inside the
8,192-token window the server enforces.
"""

from __future__ import annotations

import asyncio
import json
import sys

from pydantic import BaseModel

from avo import AgentRuntime, FunctionTool, LoopPolicy
from avo_context import CompactionBundle
from avo_providers.plugin import PROVIDER_SPECS
from avo_sqlite import SQLiteEventStore

WINDOW = 8_192
CHUNKS = 300
TASK = f"Read chunks 0 to {CHUNKS - 1} with read_chunk, one at a time, then report."
FILLER = "lorem ipsum dolor sit amet " * 36


class ChunkArgs(BaseModel):
    """Which chunk to read."""

    n: int


def chunk_text(n: int) -> str:
    """What read_chunk returns: ~1,000 characters, with a secret only this chunk has."""
    return f"chunk {n}: secret-{n * 7} {FILLER}"


def build(db: str, base_url: str) -> tuple[AgentRuntime, SQLiteEventStore]:
    provider = PROVIDER_SPECS["openai"].factory(
        {"base_url": base_url, "model": "small-8k", "api_key": "sk-test"}, environ={}
    )
    tool = FunctionTool(
        name="read_chunk",
        description="Read one chunk of the document.",
        arguments_model=ChunkArgs,
        function=lambda args: chunk_text(args.n),
    )
    store = SQLiteEventStore(db)
    runtime = AgentRuntime(
        provider=provider,
        tools=[tool],
        event_store=store,
        policy=LoopPolicy(
            max_steps=400,
            max_runtime_seconds=600,
            repeated_action_limit=400,
            no_progress_window=400,
        ),
        context_window=WINDOW,
        bundles=[CompactionBundle({"keep_recent_turns": 3})],
    )
    return runtime, store


async def main(mode: str, db: str, base_url: str, run_id: str) -> None:
    runtime, store = build(db, base_url)
    try:
        if mode == "run":
            result = await runtime.run(TASK, run_id=run_id)
        else:
            result = await runtime.resume(run_id)
        print(json.dumps(result.model_dump(mode="json")))
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
