"""run(task, session_id=...): a run continues the conversation its session's last run ended."""

from __future__ import annotations

import re
from typing import Any

import pytest

from avo import AgentRuntime, FakeProvider, ModelResponse
from avo.exceptions import SessionError
from avo.models import ModelRequest
from avo.sessions import session_store_of, title_of
from avo.storage.memory import InMemoryEventStore


class Recollecting:
    """Answers from the conversation it is given: it remembers only what it is sent."""

    name = "recollecting"
    model = "recollecting"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        task = str(request.messages[-1]["content"])
        if task.startswith("remember"):
            return ModelResponse(content="noted")
        if "code word" in task:
            for message in request.messages:
                found = re.search(r"the code word is (\w+)", str(message.get("content")))
                if found:
                    return ModelResponse(content=found.group(1))
            return ModelResponse(content="I do not know")
        return ModelResponse(content="ok")


async def test_three_runs_of_one_session_remember_the_first() -> None:
    store = InMemoryEventStore()
    provider = Recollecting()
    runtime = AgentRuntime(provider=provider, event_store=store)  # type: ignore[arg-type]
    first = await runtime.run("remember: the code word is tangerine", session_id="s1")
    second = await runtime.run("what is 2 + 2?", session_id="s1")
    third = await runtime.run("what was the code word?", session_id="s1")
    assert (first.output, second.output, third.output) == ("noted", "ok", "tangerine")
    # without the session the same question has nothing to answer from
    alone = await runtime.run("what was the code word?")
    assert alone.output == "I do not know"
    record = await store.get_session("s1")
    assert record is not None
    assert record.run_ids == [first.run_id, second.run_id, third.run_id]
    assert record.title == "remember: the code word is tangerine"
    assert record.transcript_run_id == third.run_id
    assert [m["content"] for m in record.transcript] == [
        "remember: the code word is tangerine",
        "noted",
        "what is 2 + 2?",
        "ok",
        "what was the code word?",
        "tangerine",
    ]
    # each run has its own log; the first event says where it continues from
    created = (await store.get_events(third.run_id))[0].payload["session"]
    assert created == {
        "session_id": "s1",
        "position": 3,
        "continues": second.run_id,
        "carried_messages": 4,
    }


async def test_the_system_prompt_is_per_run() -> None:
    provider = Recollecting()
    runtime = AgentRuntime(provider=provider)  # type: ignore[arg-type]
    await runtime.run("remember this", session_id="s", system_prompt="first prompt")
    await runtime.run("and this", session_id="s", system_prompt="second prompt")
    messages = provider.requests[-1].messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"] == "second prompt"


async def test_a_busy_session_is_refused(answer: Any) -> None:
    class Crash(BaseException):
        pass

    class Dies(FakeProvider):
        async def generate(self, request: ModelRequest) -> Any:
            raise Crash

    store = InMemoryEventStore()
    with pytest.raises(Crash):
        await AgentRuntime(provider=Dies([]), event_store=store).run(
            "t", session_id="s", run_id="r1"
        )
    runtime = AgentRuntime(provider=FakeProvider([answer()]), event_store=store)
    with pytest.raises(SessionError, match="session 's' is busy: its run r1 is model_pending"):
        await runtime.run("next", session_id="s")


async def test_a_bad_session_id_is_refused(answer: Any) -> None:
    runtime = AgentRuntime(provider=FakeProvider([answer()]))
    with pytest.raises(SessionError, match="invalid session id 'no spaces please'"):
        await runtime.run("t", session_id="no spaces please")


async def test_a_store_without_sessions_is_named(answer: Any) -> None:
    class Plain(InMemoryEventStore):
        create_session = None  # type: ignore[assignment]

    assert session_store_of(Plain()) is None
    runtime = AgentRuntime(provider=FakeProvider([answer()]), event_store=Plain())
    with pytest.raises(SessionError, match="does not keep sessions"):
        await runtime.run("t", session_id="s")


def test_titles() -> None:
    assert title_of("  fix the bug\nin detail") == "fix the bug"
    assert len(title_of("x" * 200)) == 80
