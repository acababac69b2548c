"""Entry point: the ``langchain`` provider (group ``avo.providers``).

Cheap to import: LangChain loads when a run builds the provider.

```toml
[provider]
name = "langchain"
[provider.settings]
chat_model = "langchain_openai:ChatOpenAI"   # any BaseChatModel class or factory
model = "gpt-4o-mini"                        # passed as model= (optional)
kwargs = { temperature = 0 }                 # the other constructor arguments
```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.plugins import ProviderCapabilities, ProviderSpec, provides


class LangChainProviderSettings(BaseModel):
    """``[provider.settings]`` of the ``langchain`` provider."""

    model_config = ConfigDict(extra="forbid")

    chat_model: str = Field(min_length=3)
    """Import path of the chat model: ``package.module:ClassName`` (or a factory)."""
    model: str | None = None
    """Passed to it as ``model=`` when set."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    """Its other constructor arguments."""


def _make(settings: Mapping[str, Any], *, environ: Mapping[str, str]) -> Any:
    from avo_langchain.provider import LangChainProvider, load_chat_model

    parsed = LangChainProviderSettings.model_validate(dict(settings))
    chat_model = load_chat_model(parsed.chat_model, model=parsed.model, kwargs=parsed.kwargs)
    return LangChainProvider(chat_model, model=parsed.model)


langchain = provides(
    ProviderSpec(
        name="langchain",
        factory=_make,
        description="Any LangChain chat model (BaseChatModel) as an avo provider",
        settings_model=LangChainProviderSettings,
        capabilities=ProviderCapabilities(
            streaming=True, tool_calls=True, parallel_tool_calls=True
        ),
    )
)

__all__ = ["LangChainProviderSettings", "langchain"]
