"""Seed secrets, drive every output avo produces, and grep each one for them.

Outputs covered: log lines (plain and JSON, including tracebacks), audit
lines, stored events (every payload), the run head and RunResult errors,
OpenTelemetry spans, notification bodies (webhook on a real loopback server),
background-job errors, and exception messages.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from avo.audit import AuditLog
from avo.background import BackgroundJobManager
from avo.exceptions import ProviderError
from avo.hooks import HookRegistry
from avo.logging_config import configure_logging
from avo.models import ModelResponse, TokenUsage, ToolCall
from avo.plugins.manager import PluginManager
from avo.providers.fake import FakeProvider
from avo.redaction import Redactor
from avo.runtime import AgentRuntime
from avo.storage.memory import InMemoryEventStore
from avo.tools import FunctionTool
from avo_notifiers import NotificationDispatcher, WebhookNotifier, notify_hooks, register_all
from avo_otel import OtelPlugin
from avo_sqlite import SQLiteEventStore

API_KEY = "sk-proj-SEEDEDkey0123456789abcdef"
SERVICE_TOKEN = "tok_SEEDED_service_token_42"
DB_SECRET = "SEEDED-db-secret-value"
DB_PASSWORD = "SEEDED-p4ssw0rd"
BEARER = "SEEDEDbearerTOKEN987654321"
SECRETS = (API_KEY, SERVICE_TOKEN, DB_SECRET, DB_PASSWORD, BEARER)
# Fragments a partial mask could leave behind.
FRAGMENTS = ("SEEDED",)

ENV = {
    "AVO_OPENAI_API_KEY": API_KEY,
    "MY_SERVICE_TOKEN": SERVICE_TOKEN,
    "DB_SECRET": DB_SECRET,
    "DB_PASSWORD": DB_PASSWORD,
    "AVO_OTEL_ENABLED": "1",
    "PATH": "/usr/bin",
}


def assert_clean(label: str, text: str) -> None:
    for secret in (*SECRETS, *FRAGMENTS):
        assert secret not in text, f"{label} leaks {secret!r}:\n{text[:2000]}"


class LeakyArgs(BaseModel):
    what: str


def leaky_tool(args: LeakyArgs) -> dict:
    """A tool that echoes credentials, as a careless shell command would."""
    logging.getLogger("avo.tools.leaky").warning(
        "dumping env: key=%s token=%s", API_KEY, SERVICE_TOKEN
    )
    return {
        "env": {"AVO_OPENAI_API_KEY": API_KEY, "DB_PASSWORD": DB_PASSWORD},
        "stdout": f"export MY_SERVICE_TOKEN={SERVICE_TOKEN}\nAuthorization: Bearer {BEARER}",
        "note": f"db secret is {DB_SECRET}",
    }


class FailingTool(BaseModel):
    pass


def failing_tool(args: FailingTool) -> dict:
    raise RuntimeError(f"connection refused for postgres://app:{DB_PASSWORD}@db/x")


class LeakyProvider(FakeProvider):
    """Fails once with the key in its error text (as an SDK echoing a request would)."""

    name = "openai"
    model = "gpt-test"

    def __init__(self, script, *, fail_with: str | None = None) -> None:
        super().__init__(script)
        self.fail_with = fail_with

    async def generate(self, request):
        if self.fail_with is not None:
            message, self.fail_with = self.fail_with, None
            raise ProviderError(message, retryable=True)
        return await super().generate(request)


class Collector:
    def __init__(self) -> None:
        self.bodies: list[str] = []

    def start(self) -> str:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                sink.bodies.append(body.decode())
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/hook"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def seeded_env(monkeypatch):
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    return ENV


@pytest.fixture
def captured_logs(seeded_env):
    plain, as_json = io.StringIO(), io.StringIO()
    configure_logging(logger_name="avo", stream=plain, environ=seeded_env, level="DEBUG")
    configure_logging(
        logger_name="avo.tools", stream=as_json, environ=seeded_env, json_mode=True, level="DEBUG"
    )
    yield plain, as_json
    for name in ("avo", "avo.tools"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(logging.NOTSET)


async def test_seeded_secrets_never_reach_any_output(tmp_path, seeded_env, captured_logs):
    plain_logs, json_logs = captured_logs
    collector = Collector()
    url = collector.start()
    try:
        exporter = InMemorySpanExporter()
        manager = PluginManager(autoload=False, environ={})
        manager.register(OtelPlugin.from_env(environ=seeded_env, exporter=exporter), "otel")
        hooks = HookRegistry()
        dispatcher = NotificationDispatcher([WebhookNotifier(url)], redactor=Redactor())
        register_all(hooks, notify_hooks(dispatcher=dispatcher))
        tools = [
            FunctionTool(
                name="leaky", description="d", arguments_model=LeakyArgs, function=leaky_tool
            ),
            FunctionTool(
                name="failing", description="d", arguments_model=FailingTool, function=failing_tool
            ),
        ]
        provider = LeakyProvider(
            [
                ModelResponse(
                    tool_call=ToolCall(name="leaky", arguments={"what": f"key {API_KEY}"}),
                    usage=TokenUsage(input_tokens=10, output_tokens=2),
                ),
                ModelResponse(
                    tool_call=ToolCall(name="failing", arguments={}),
                    usage=TokenUsage(input_tokens=10, output_tokens=2),
                ),
                ModelResponse(content=f"done; the token was {SERVICE_TOKEN}"),
            ],
            fail_with=f"401 Unauthorized: key {API_KEY} (Authorization: Bearer {BEARER})",
        )
        db = tmp_path / "avo.db"
        store = SQLiteEventStore(db)
        runtime = AgentRuntime(
            provider=provider, tools=tools, event_store=store, plugins=manager, hooks=hooks
        )
        result = await runtime.run(f"use the key {API_KEY} to call the service")
        events = await store.get_events(result.run_id)
        run = await store.get_run(result.run_id)
        await store.close()

        # a failing run: the error text comes from the provider's message
        failing = AgentRuntime(
            provider=LeakyProvider([], fail_with=f"bad key {API_KEY}"),
            event_store=InMemoryEventStore(),
        )
        failed = await failing.run("x")
        failed_events = await failing.event_store.get_events(failed.run_id)
        await failing.event_store.close()
    finally:
        collector.stop()

    assert result.status.value == "completed"
    assert failed.status.value == "failed"
    kinds = [e.event_type.value for e in events]
    assert "model_failed" in kinds and "tool_completed" in kinds and "tool_failed" in kinds

    # events (every payload) and the run head / results
    assert_clean("events", json.dumps([e.model_dump(mode="json") for e in events]))
    assert_clean("failed events", json.dumps([e.model_dump(mode="json") for e in failed_events]))
    assert_clean("run head", run.model_dump_json())
    assert_clean("run result", result.model_dump_json() + failed.model_dump_json())
    assert "***" in json.dumps([e.payload for e in events])  # they were there, and masked

    # ... and what the SQLite store wrote to disk for events and run heads. (Checkpoints
    # hold the conversation the model sees, verbatim, so resume stays faithful.)
    import sqlite3

    with sqlite3.connect(db) as conn:
        for table in ("events", "runs"):
            rows = conn.execute(f"SELECT * FROM {table}").fetchall()
            assert rows
            assert_clean(f"sqlite {table} table", repr(rows))

    # logs
    logging.getLogger("avo.runtime").error("provider said %s", f"Bearer {BEARER}")
    try:
        raise ProviderError(f"key={API_KEY}")
    except ProviderError:
        logging.getLogger("avo.tools.x").exception("failed with %s", DB_SECRET)
    assert plain_logs.getvalue() and json_logs.getvalue()
    assert_clean("plain logs", plain_logs.getvalue())
    assert_clean("json logs", json_logs.getvalue())

    # traces
    spans = exporter.get_finished_spans()
    assert spans
    assert_clean("spans", "\n".join(span.to_json() for span in spans))

    # notifications (real webhook on loopback)
    assert collector.bodies
    assert_clean("webhook bodies", "\n".join(collector.bodies))

    # audit lines
    audit = AuditLog(tmp_path / "audit.jsonl")
    audit.record(
        "provider.configured",
        actor=f"user with {SERVICE_TOKEN}",
        payload={
            "api_key": API_KEY,
            "headers": {"Authorization": f"Bearer {BEARER}"},
            "dsn": f"postgres://u:{DB_PASSWORD}@h/db",
            "note": DB_SECRET,
        },
    )
    assert_clean("audit", (tmp_path / "audit.jsonl").read_text())

    # background job errors
    jobs = BackgroundJobManager()

    async def job() -> None:
        raise RuntimeError(f"upload failed with {API_KEY}")

    done = await jobs.wait(jobs.submit(job(), name="upload").job_id)
    assert_clean("job error", done.error or "")


def test_redactor_defaults_to_process_environment(seeded_env):
    text = f"{API_KEY} {SERVICE_TOKEN} {DB_SECRET} {DB_PASSWORD} Authorization: Bearer {BEARER}"
    assert_clean("default redactor", Redactor().text(text))
    assert_clean("runtime redactor", AgentRuntime(provider=FakeProvider([])).redactor.text(text))
