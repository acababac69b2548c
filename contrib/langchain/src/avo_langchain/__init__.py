"""avo and LangChain, both ways.

- :class:`AvoLangChainModel`: an avo provider as a LangChain chat model.
- :class:`LangChainProvider`: a LangChain chat model as an avo provider (also
  the ``langchain`` provider plugin, configured in avo.toml).
- :func:`avo_tool_from_lc`: a LangChain tool as an avo tool, its schema kept.
- :func:`to_langchain_messages` / :func:`from_langchain_messages`: transcripts
  both ways (and single messages, responses).
"""

from __future__ import annotations

from avo_langchain.chat_model import AvoLangChainModel
from avo_langchain.messages import (
    avo_messages_from_lc,
    from_langchain_ai_message,
    from_langchain_message,
    from_langchain_messages,
    to_langchain_ai_message,
    to_langchain_message,
    to_langchain_messages,
)
from avo_langchain.provider import LangChainProvider, load_chat_model
from avo_langchain.tools import LangChainTool, avo_tool_from_lc, metadata_from_lc

__all__ = [
    "AvoLangChainModel",
    "LangChainProvider",
    "LangChainTool",
    "avo_messages_from_lc",
    "avo_tool_from_lc",
    "from_langchain_ai_message",
    "from_langchain_message",
    "from_langchain_messages",
    "load_chat_model",
    "metadata_from_lc",
    "to_langchain_ai_message",
    "to_langchain_message",
    "to_langchain_messages",
]
