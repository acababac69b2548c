"""Engines (avo.engines): the plugin kind, the in-process engine, and operations relayed as signals.

The ``relay`` engine below is a third-party engine plugin (an installed-looking
distribution on sys.path): its ``signal`` queues each operation, and the test
plays its driver, carrying each one out through the kernel as a workflow would.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, FunctionTool
from avo.approval import Answer, Approval
from avo.cli import main
from avo.compose import resolve_config
from avo.engines import Engine, InProcessEngine, RunSubmission, engine_record, open_engine
from avo.exceptions import ConfigError, EngineError
from avo.models import ToolCall, ToolRisk
from avo.ops import approve, cancel, resume
from avo.ops._context import offline_runtime
from avo.ops._engine import follow
from avo.ops.cancel import cancel_run
from avo.plugins.manager import PluginManager
from avo.state import RunState, StopReason
from avo.storage.memory import InMemoryEventStore
from avo.testing import answer, scripted, tool_call
from avo.testing.plugins import write_distribution

RELAY_ENGINE = """
import asyncio
from avo.exceptions import EngineRunGoneError
from avo.plugins import EngineSpec, provides

SIGNALS = asyncio.Queue()


class RelayEngine:
    name = "relay"
    remote = True

    def __init__(self, settings):
        self.settings = settings

    async def submit(self, submission):
        await SIGNALS.put(("submit", submission.run_id, {"task": submission.task}))
        return submission.run_id

    async def signal(self, run_id, operation, payload):
        if self.settings.get("gone"):  # its driver ended before the run did
            raise EngineRunGoneError(f"no driver for {run_id}", engine="relay", run_id=run_id)
        await SIGNALS.put((operation, run_id, dict(payload, settings=self.settings)))

    async def serve(self, options):
        await asyncio.Event().wait()


def make(settings, environ=None):
    return RelayEngine(settings)


plugin = provides(EngineSpec(name="relay", factory=make))
"""


@pytest.fixture
def relay_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    write_distribution(
        tmp_path,
        "avo-relay-engine",
        entry_points={"avo.engines": {"relay": "avo_relay_engine:plugin"}},
        modules={"avo_relay_engine": RELAY_ENGINE},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    yield importlib.import_module("avo_relay_engine")
    sys.modules.pop("avo_relay_engine", None)


class _Args(BaseModel):
    n: int


def _write_tool() -> FunctionTool[_Args]:
    return FunctionTool(
        name="write",
        description="write n",
        arguments_model=_Args,
        function=lambda a: {"n": a.n},
        risk=ToolRisk.MODIFY,
        run_in_thread=False,
    )


def _asks(call: ToolCall) -> Approval:
    return Approval.ask("writes need a person")


def _runtime(store: Any, engine: dict[str, Any] | None) -> AgentRuntime:
    rt = AgentRuntime(
        provider=scripted(tool_call("write", {"n": 1}), answer("done")),
        tools=[_write_tool()],
        event_store=store,
        approval_callback=_asks,
        environ={},
    )
    rt.engine = engine
    return rt


def test_engines_are_a_plugin_kind_and_the_kernel_ships_in_process() -> None:
    manager = PluginManager(environ={})
    assert "in-process" in manager.names("engine")
    engine = open_engine("in-process", environ={})
    assert isinstance(engine, Engine) and engine.remote is False
    with pytest.raises(ConfigError, match="in-process"):
        open_engine("nope", environ={})


async def test_the_in_process_engine_drives_a_submitted_run_here_and_has_no_workers(
    tmp_path: Path,
) -> None:
    config_file = tmp_path / "avo.toml"
    config_file.write_text(
        '[provider]\nname = "fake"\n[provider.settings]\nscript = [{content = "hi"}]\n'
        f'[store]\nlocation = "{tmp_path / "runs.db"}"\n',
        encoding="utf-8",
    )
    resolved = resolve_config(config_file, environ={}, user=False)
    engine = InProcessEngine()
    run_id = await engine.submit(RunSubmission(task="say hi", run_id="r1", resolved=resolved))
    assert run_id == "r1"
    from avo.compose import open_store

    store = open_store(str(tmp_path / "runs.db"))
    try:
        head = await store.get_run("r1")
        assert head is not None and head.output == "hi"
        assert engine_record(await store.get_events("r1")) is None  # in-process records none
    finally:
        await store.close()
    with pytest.raises(EngineError, match="has no workers"):
        await engine.serve(None)  # type: ignore[arg-type]


async def test_cancel_and_answers_reach_an_engine_run_as_signals(relay_engine: Any) -> None:
    store = InMemoryEventStore()
    record = {"name": "relay", "settings": {"queue": "q1"}}
    paused = await _runtime(store, record).run("write", run_id="r1")
    assert paused.status is RunState.PAUSED
    assert engine_record(await store.get_events("r1")) == record
    before = len(await store.get_events("r1"))

    requests = await approve(store, "r1", reason="fine", by="ana", environ={})
    operation, run_id, payload = relay_engine.SIGNALS.get_nowait()
    assert (operation, run_id) == ("answer", "r1") and payload["settings"] == {"queue": "q1"}
    given = payload["answers"][requests[0].tool_call_id]
    assert (given["decision"], given["reason"], given["by"]) == ("approve", "fine", "ana")
    assert len(await store.get_events("r1")) == before  # the driver records it, not the op

    # the driver (a workflow, in real life) applies the answer and finishes the run
    answers = {requests[0].tool_call_id: Answer.approve(given["reason"], by=given["by"])}
    rt = _runtime(store, record)
    cp = await store.get_latest_checkpoint("r1")
    assert cp is not None
    rt.provider.restore_state(cp.provider_metadata)  # type: ignore[attr-defined]
    done = await rt.resume("r1", answers=answers, lease=False)
    assert done.status is RunState.COMPLETED


async def test_cancel_is_relayed_and_followed_until_the_driver_ends_the_run(
    relay_engine: Any,
) -> None:
    store = InMemoryEventStore()
    await _runtime(store, {"name": "relay"}).run("write", run_id="r1")

    async def driver() -> None:
        operation, run_id, payload = await relay_engine.SIGNALS.get()
        assert operation == "cancel"
        head = await store.get_run(run_id)
        assert head is not None
        await cancel_run(offline_runtime(store, environ={}), head, payload["reason"])

    driving = asyncio.ensure_future(driver())
    result = await cancel(store, "r1", reason="changed my mind", environ={}, wait_seconds=10)
    await driving
    assert result.status is RunState.CANCELLED and result.stop_reason is StopReason.USER_CANCELLED
    assert result.error == "changed my mind"


async def test_cancel_ends_an_engine_run_in_the_store_when_its_driver_is_gone(
    relay_engine: Any,
) -> None:
    store = InMemoryEventStore()
    record = {"name": "relay", "settings": {"gone": True}}
    assert (await _runtime(store, record).run("write", run_id="r1")).status is RunState.PAUSED
    with pytest.raises(EngineError, match="no driver"):  # an answer has no one to go to
        await approve(store, "r1", environ={})
    result = await cancel(store, "r1", reason="nobody drives it", environ={}, wait_seconds=10)
    assert result.status is RunState.CANCELLED and result.stop_reason is StopReason.USER_CANCELLED
    assert result.error == "nobody drives it"
    assert relay_engine.SIGNALS.empty()
    events = await store.get_events("r1")
    assert events[-1].event_type.value == "run_cancelled"


async def test_resume_of_an_engine_run_is_relayed(relay_engine: Any) -> None:
    store = InMemoryEventStore()
    await _runtime(store, {"name": "relay"}).run("write", run_id="r1")

    async def driver() -> None:
        operation, run_id, payload = await relay_engine.SIGNALS.get()
        assert (operation, payload["fail_open_tool_calls"]) == ("resume", True)
        head = await store.get_run(run_id)
        assert head is not None
        await cancel_run(offline_runtime(store, environ={}), head, "resumed into a cancel")

    driving = asyncio.ensure_future(driver())
    result = await resume(store, "r1", environ={}, fail_open_tool_calls=True)
    await driving
    assert result.status is RunState.CANCELLED


class _WholeLogReads(InMemoryEventStore):
    """Counts the whole-log reads (``get_events``) each task makes."""

    def __init__(self) -> None:
        super().__init__()
        self.whole_reads: dict[Any, int] = {}

    async def get_events(self, run_id: str) -> Any:
        task = asyncio.current_task()
        self.whole_reads[task] = self.whole_reads.get(task, 0) + 1
        return await super().get_events(run_id)


async def test_following_an_engine_run_reads_only_its_new_events() -> None:
    store = _WholeLogReads()
    await _runtime(store, None).run("write", run_id="r1")  # paused at the approval
    head = await store.get_run("r1")
    assert head is not None and head.state is RunState.PAUSED
    after = (await store.get_events_after("r1", 0))[-1].sequence

    async def driver() -> None:
        await asyncio.sleep(0.35)  # the follower polls a few times first
        await cancel_run(offline_runtime(store, environ={}), head, "stopped elsewhere")

    driving = asyncio.ensure_future(driver())
    seen: list[Any] = []
    result = await follow(store, "r1", after=after, on_event=seen.append, paused_ok=False)
    await driving
    assert result.status is RunState.CANCELLED and result.error == "stopped elsewhere"
    assert store.whole_reads.get(asyncio.current_task(), 0) == 0
    assert [e.sequence for e in seen] == [
        e.sequence for e in await store.get_events_after("r1", after)
    ]
    assert seen and seen[0].sequence == after + 1


async def test_a_follower_reports_a_driver_that_stopped_and_reads_the_store_once_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from avo.exceptions import EngineRunGoneError

    monkeypatch.setattr("avo.ops._engine.DRIVER_CHECK_SECONDS", 0.0)
    store = InMemoryEventStore()
    await _runtime(store, None).run("write", run_id="r1")  # paused at the approval
    head = await store.get_run("r1")
    assert head is not None
    after = (await store.get_events_after("r1", 0))[-1].sequence
    asked: list[str] = []

    async def stopped() -> str | None:
        asked.append("?")
        return "its workflow failed: boom" if len(asked) > 2 else None

    with pytest.raises(EngineRunGoneError, match=r"run r1 is paused, but its engine stopped"):
        await follow(store, "r1", after=after, paused_ok=False, driver=stopped)
    assert len(asked) == 3
    with pytest.raises(EngineRunGoneError, match=r"run r9 never started.*failed: boom"):
        await follow(store, "r9", driver=stopped)

    async def ended_as_it_stopped() -> str:  # the driver's last write landed meanwhile
        await cancel_run(offline_runtime(store, environ={}), head, "done elsewhere")
        return "its workflow completed"

    result = await follow(store, "r1", after=after, paused_ok=False, driver=ended_as_it_stopped)
    assert result.status is RunState.CANCELLED


async def test_an_engine_run_whose_engine_is_not_installed_is_a_clear_error() -> None:
    store = InMemoryEventStore()
    await _runtime(store, {"name": "elsewhere"}).run("write", run_id="r1")
    with pytest.raises(ConfigError, match=r"run r1 \(its engine record\).*'elsewhere'"):
        await cancel(store, "r1", environ={})


async def test_runtime_cancel_ends_the_run_it_drives_with_the_reason_and_closes_cut_calls() -> None:
    started = asyncio.Event()

    async def slow(args: _Args) -> dict[str, int]:
        started.set()
        await asyncio.sleep(60)
        return {"n": args.n}

    tool = FunctionTool(
        name="slow", description="slow", arguments_model=_Args, function=slow, risk=ToolRisk.INSPECT
    )
    store = InMemoryEventStore()
    rt = AgentRuntime(
        provider=scripted(tool_call("slow", {"n": 1}), answer("done")),
        tools=[tool],
        event_store=store,
        environ={},
    )
    assert not rt.cancel()
    driving = asyncio.ensure_future(rt.run("go", run_id="r1"))
    await started.wait()
    assert rt.cancel("the operator stopped it")
    result = await driving
    assert result.status is RunState.CANCELLED and result.error == "the operator stopped it"
    events = await store.get_events("r1")
    failed = [e for e in events if e.event_type.value == "tool_failed"]
    assert "the run was cancelled (the operator stopped it)" in str(failed[0].payload["error"])


def test_avo_worker_says_what_is_missing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AVO_CONFIG_DIR", str(tmp_path / "home"))
    monkeypatch.delenv("AVO_ENGINE", raising=False)
    monkeypatch.setenv("AVO_SERVER_GC", "off")  # in this process: leave pytest's collector be
    assert main(["worker"]) == 2
    assert "no engine to serve: pass --engine NAME" in capsys.readouterr().err
    assert main(["worker", "--engine", "in-process"]) == 2
    assert "the in-process engine has no workers" in capsys.readouterr().err
    assert main(["worker", "--engine", "in-process", "--concurrency", "0"]) == 2
    assert "--concurrency 0: give a positive number" in capsys.readouterr().err
    assert main(["worker", "--engine", "in-process", "--stop-seconds", "-1"]) == 2
    assert "--stop-seconds -1: give how many seconds (0 to 3600)" in capsys.readouterr().err
    assert main(["worker", "--engine", "warp"]) == 2
    assert "'warp'" in capsys.readouterr().err
