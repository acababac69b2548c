"""What each shipped provider knows about its models: limits, capabilities, prices.

Pure data (no httpx). Prices are USD per million tokens from the vendors'
public price pages, with the month they were read (``checked``); they change,
so costs computed from them are estimates. ``None`` anywhere means unknown, and
``avo models`` says so rather than guessing.

Cache prices: Anthropic bills a 5-minute cache write at 1.25x the input price
and a cache read at 0.1x; OpenAI bills cached input at a discount and writes
nothing extra; Gemini bills implicitly cached input at a discount.
"""

from __future__ import annotations

from decimal import Decimal

from avo.plugins import ModelInfo
from avo.pricing import prices

CHECKED = "2025-11"
"""When the prices and limits below were read off the vendors' pages."""

PDF = ("application/pdf",)
PDF_AND_TEXT = ("application/pdf", "text/plain")


def _info(
    name: str,
    window: int | None,
    out: int | None,
    price: tuple[str, str, str | None, str | None] | None,
    *,
    vision: bool | None,
    documents: tuple[str, ...] | None,
    tools: bool | None = True,
    json_schema: bool | None = None,
    thinking: bool | None = None,
    caching: bool | None = None,
) -> ModelInfo:
    return ModelInfo(
        name=name,
        context_window=window,
        max_output_tokens=out,
        tools=tools,
        vision=vision,
        documents=documents,
        json_schema=json_schema,
        thinking=thinking,
        prompt_caching=caching,
        prices=prices(*price, checked=CHECKED) if price is not None else None,
    )


def _anthropic(name: str, i: str, o: str, out: int, thinking: bool, pdf: bool) -> ModelInfo:
    read = format((Decimal(i) * Decimal("0.1")).normalize(), "f")
    write = format((Decimal(i) * Decimal("1.25")).normalize(), "f")
    return _info(
        name,
        200_000,
        out,
        (i, o, read, write),
        vision=True,
        documents=PDF_AND_TEXT if pdf else (),
        json_schema=False,
        thinking=thinking,
        caching=True,
    )


def _openai(
    name: str, window: int, out: int, price: tuple[str, str, str | None], vision: bool, think: bool
) -> ModelInfo:
    return _info(
        name,
        window,
        out,
        (*price, None),
        vision=vision,
        documents=PDF if vision else (),
        json_schema=True,
        thinking=think,
        caching=price[2] is not None,
    )


def _gemini(name: str, out: int, price: tuple[str, str, str], think: bool) -> ModelInfo:
    return _info(
        name,
        1_048_576,
        out,
        (*price, None),
        vision=True,
        documents=PDF,
        json_schema=True,
        thinking=think,
        caching=True,
    )


def _text_model(name: str, window: int | None, price: tuple[str, str] | None) -> ModelInfo:
    return _info(
        name,
        window,
        None,
        (*price, None, None) if price else None,
        vision=False,
        documents=(),
        caching=False,
    )


_TABLE: dict[str, list[ModelInfo]] = {
    "anthropic": [
        _anthropic("claude-sonnet-4-6", "3", "15", 64_000, True, True),
        _anthropic("claude-sonnet-4-5", "3", "15", 64_000, True, True),
        _anthropic("claude-opus-4-5", "5", "25", 64_000, True, True),
        _anthropic("claude-haiku-4-5", "1", "5", 64_000, True, True),
        _anthropic("claude-3-5-sonnet", "3", "15", 8_192, False, True),
        _anthropic("claude-3-5-haiku", "0.80", "4", 8_192, False, True),
        _anthropic("claude-3-opus", "15", "75", 4_096, False, False),
    ],
    "openai": [
        _openai("gpt-4o", 128_000, 16_384, ("2.50", "10", "1.25"), True, False),
        _openai("gpt-4o-mini", 128_000, 16_384, ("0.15", "0.60", "0.075"), True, False),
        _openai("gpt-4.1", 1_047_576, 32_768, ("2", "8", "0.50"), True, False),
        _openai("gpt-4.1-mini", 1_047_576, 32_768, ("0.40", "1.60", "0.10"), True, False),
        _openai("gpt-4.1-nano", 1_047_576, 32_768, ("0.10", "0.40", "0.025"), True, False),
        _openai("o1", 200_000, 100_000, ("15", "60", "7.50"), True, True),
        _openai("o1-mini", 128_000, 65_536, ("1.10", "4.40", "0.55"), False, True),
        _openai("o3-mini", 200_000, 100_000, ("1.10", "4.40", "0.55"), False, True),
        _openai("gpt-3.5-turbo", 16_385, 4_096, ("0.50", "1.50", None), False, False),
        _openai("gpt-5", 400_000, 128_000, ("1.25", "10", "0.125"), True, True),
        _openai("gpt-5-mini", 400_000, 128_000, ("0.25", "2", "0.025"), True, True),
        _openai("gpt-5-nano", 400_000, 128_000, ("0.05", "0.40", "0.005"), True, True),
        _openai("o3", 200_000, 100_000, ("2", "8", "0.50"), True, True),
        _openai("o4-mini", 200_000, 100_000, ("1.10", "4.40", "0.275"), True, True),
    ],
    "gemini": [
        _gemini("gemini-2.5-pro", 65_536, ("1.25", "10", "0.31"), True),
        _gemini("gemini-2.5-flash", 65_536, ("0.30", "2.50", "0.075"), True),
        _gemini("gemini-2.5-flash-lite", 65_536, ("0.10", "0.40", "0.025"), True),
        _gemini("gemini-2.0-flash", 8_192, ("0.10", "0.40", "0.025"), False),
    ],
    "groq": [
        _text_model("llama-3.3-70b-versatile", 131_072, ("0.59", "0.79")),
        _text_model("llama-3.1-8b-instant", 131_072, ("0.05", "0.08")),
        _text_model("mixtral-8x7b-32768", 32_768, None),
        _text_model("gemma2-9b-it", 8_192, ("0.20", "0.20")),
    ],
    "cerebras": [
        _text_model("llama-3.3-70b", None, ("0.85", "1.20")),
        _text_model("llama-3.1-8b", None, ("0.10", "0.10")),
        _text_model("qwen-2.5-32b", None, None),
    ],
    "minimax": [_text_model("MiniMax-M2", 204_800, ("0.30", "1.20"))],
}

MODEL_INFO: dict[str, dict[str, ModelInfo]] = {
    provider: {info.name: info for info in infos} for provider, infos in _TABLE.items()
}
"""provider -> model -> what is known about it (models not listed: all unknown)."""
MODEL_INFO["openai-responses"] = MODEL_INFO["openai"]  # the same models, another API


def model_info(provider: str, model: str | None) -> ModelInfo | None:
    """The catalog entry of ``provider``'s ``model`` (a dated suffix is matched too)."""
    table = MODEL_INFO.get(provider, {})
    if not model:
        return None
    found = table.get(model)
    if found is None:  # "claude-sonnet-4-5-20250929" is "claude-sonnet-4-5"
        for name, info in table.items():
            if model.startswith(name + "-") and model[len(name) + 1 :][:1].isdigit():
                return info
    return found


__all__ = ["CHECKED", "MODEL_INFO", "model_info"]
