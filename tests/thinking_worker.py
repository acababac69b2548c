"""Worker process of test_thinking_survives_sigkill: run or resume a run that thinks.

``python thinking_worker.py run|resume STYLE DB BASE_URL`` drives run ``r`` with
the real adapter of STYLE (``anthropic`` or ``minimax-anthropic``, ``gemini``, or
``openai-responses``)
at BASE_URL on a SQLite store at DB, and prints the run's status and output.
"""

from __future__ import annotations

import asyncio
import sys

from pydantic import BaseModel

from avo import AgentRuntime, FunctionTool
from avo_providers.anthropic import AnthropicProvider
from avo_providers.base_http import MiniMaxConfig, ProviderConfig
from avo_providers.gemini import GeminiProvider
from avo_providers.minimax import MiniMaxProvider
from avo_providers.openai_responses import OpenAIResponsesProvider
from avo_sqlite import SQLiteEventStore

KEY = "sk-thinking-0123456789abcdef"


class City(BaseModel):
    city: str


def provider(style: str, url: str) -> object:
    if style == "anthropic":
        return AnthropicProvider(ProviderConfig(model="m", api_key=KEY, base_url=url))
    if style == "openai-responses":
        return OpenAIResponsesProvider(ProviderConfig(model="m", api_key=KEY, base_url=url))
    if style == "gemini":
        return GeminiProvider(ProviderConfig(model="m", api_key=KEY, base_url=url))
    config = MiniMaxConfig(model="m", api_key=KEY, base_url=url, api_style="anthropic")
    return MiniMaxProvider(config)


async def main(mode: str, style: str, db: str, url: str) -> None:
    tool = FunctionTool(
        name="get_weather",
        description="Weather for a city.",
        arguments_model=City,
        function=lambda args: {"city": args.city, "sky": "clear"},
        risk="inspect",
    )
    runtime = AgentRuntime(
        provider=provider(style, url), tools=[tool], event_store=SQLiteEventStore(db)
    )
    if mode == "run":
        result = await runtime.run("weather in Oslo?", run_id="r")
    else:
        result = await runtime.resume("r")
    print(result.status.value, result.output, result.error, flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
