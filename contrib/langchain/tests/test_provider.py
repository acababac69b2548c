"""A LangChain chat model as an avo provider: in a run, streaming, and from avo.toml."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from avo.exceptions import ConfigError, ProviderError
from avo.models import FinishReason
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo_langchain import LangChainProvider, avo_tool_from_lc, load_chat_model


@tool
def lookup_port(service: str) -> str:
    """The port a service listens on."""
    return {"staging-api": "8443"}.get(service, "unknown")


def _script() -> list[AIMessage]:
    return [
        AIMessage(
            content="",
            tool_calls=[
                {"name": "lookup_port", "args": {"service": "staging-api"}, "id": "lc-call-1"}
            ],
            usage_metadata={"input_tokens": 20, "output_tokens": 5, "total_tokens": 25},
        ),
        AIMessage(
            content="The staging API listens on 8443.",
            usage_metadata={"input_tokens": 30, "output_tokens": 8, "total_tokens": 38},
            response_metadata={"finish_reason": "stop"},
        ),
    ]


@pytest.mark.parametrize("streamed", [False, True], ids=["generate", "stream"])
async def test_a_langchain_chat_model_drives_an_avo_run_with_a_langchain_tool(
    fake_chat: Any, streamed: bool
) -> None:
    chat = fake_chat(messages=iter(_script()))
    shown: list[str] = []
    runtime = AgentRuntime(
        provider=LangChainProvider(chat, model="scripted"),
        tools=[avo_tool_from_lc(lookup_port)],
        stream_callback=shown.append if streamed else None,
    )
    result = await runtime.run("Which port does the staging API use?", system_prompt="Be brief.")
    assert result.status is RunState.COMPLETED
    assert result.output == "The staging API listens on 8443."
    assert result.token_usage.input_tokens == 50 and result.token_usage.output_tokens == 13
    if streamed:
        assert "".join(shown) == "The staging API listens on 8443."
    # The chat model was shown the tool's own schema, and saw its result on the second turn.
    assert fake_chat.bound[0][0]["function"]["name"] == "lookup_port"
    assert fake_chat.bound[0][0]["function"]["parameters"]["required"] == ["service"]
    second = fake_chat.seen[1]
    assert [type(m) for m in second] == [SystemMessage, HumanMessage, AIMessage, ToolMessage]
    assert second[2].tool_calls[0]["id"] == "lc-call-1"
    assert second[3].tool_call_id == "lc-call-1" and second[3].content == "8443"


async def test_chat_model_failures_become_provider_errors(fake_chat: Any) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    class Down(FakeListChatModel):
        def _call(self, *args: Any, **kwargs: Any) -> str:
            raise ConnectionError("vendor unreachable")

    provider = LangChainProvider(Down(responses=["x"]))
    with pytest.raises(ProviderError, match="vendor unreachable") as caught:
        await provider.generate(_request("hi"))
    assert caught.value.retryable
    plain = LangChainProvider(FakeListChatModel(responses=["plain answer"]))
    response = await plain.generate(_request("hi"))
    assert response.content == "plain answer" and response.finish_reason is FinishReason.STOP
    with pytest.raises(ConfigError, match="needs a LangChain BaseChatModel, got str"):
        LangChainProvider("gpt")  # type: ignore[arg-type]


def _request(text: str) -> Any:
    from avo.models import ModelRequest

    return ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": text}])


def test_import_paths_are_checked_with_the_fix() -> None:
    with pytest.raises(ConfigError, match="is not an import path; write 'package"):
        load_chat_model("ChatOpenAI")
    with pytest.raises(ConfigError, match="cannot import 'langchain_nowhere'"):
        load_chat_model("langchain_nowhere:Chat")
    with pytest.raises(ConfigError, match="has no 'Missing'"):
        load_chat_model("langchain_core.language_models:Missing")
    with pytest.raises(ConfigError, match="built a Tool"):
        load_chat_model(
            "langchain_core.tools:Tool", kwargs={"name": "t", "description": "d", "func": print}
        )


def test_avo_run_with_the_langchain_provider_from_avo_toml(tmp_path: Path) -> None:
    (tmp_path / "avo.toml").write_text(
        '[provider]\nname = "langchain"\n'
        "[provider.settings]\n"
        'chat_model = "langchain_core.language_models.fake_chat_models:FakeListChatModel"\n'
        'kwargs = { responses = ["Hello from a LangChain chat model."] }\n'
    )
    env = {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1"}
    env.pop("AVO_PROVIDER", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "avo.cli",
            "run",
            "-d",
            str(tmp_path / "avo.db"),
            "--no-session",
            "Say hello",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello from a LangChain chat model."
    (tmp_path / "avo.toml").write_text(
        '[provider]\nname = "langchain"\n[provider.settings]\nchat_model = "nowhere:Chat"\n'
    )
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "avo.cli",
            "run",
            "-d",
            str(tmp_path / "avo.db"),
            "--no-session",
            "Say hello",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode != 0
    assert "chat_model 'nowhere:Chat': cannot import 'nowhere'" in bad.stderr
