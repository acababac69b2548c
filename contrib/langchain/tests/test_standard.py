"""LangChain's own standard unit tests for chat models, run on AvoLangChainModel.

The provider is avo's scripted FakeProvider: no network, no vendor.
"""

from __future__ import annotations

from typing import Any

from langchain_tests.unit_tests import ChatModelUnitTests

from avo.models import ModelResponse
from avo.providers.fake import FakeProvider
from avo_langchain import AvoLangChainModel


class TestAvoLangChainModelStandard(ChatModelUnitTests):
    @property
    def chat_model_class(self) -> type[AvoLangChainModel]:
        return AvoLangChainModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        provider = FakeProvider([ModelResponse(content="scripted answer")], repeat_last=True)
        return {"provider": provider, "model": "fake"}
