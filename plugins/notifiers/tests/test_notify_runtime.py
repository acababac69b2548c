"""Notifications fired by a real run: NOTIFICATION at the error threshold, then STOP."""

from avo.exceptions import ProviderError
from avo.hooks import HookRegistry
from avo.models import ModelResponse
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo_notifiers import notify_hooks, register_all


class FlakyProvider(FakeProvider):
    async def generate(self, request):
        raise ProviderError("upstream 503", retryable=True)


async def test_run_end_and_error_threshold_post_to_the_webhook(webhook_server):
    hooks = HookRegistry()
    register_all(hooks, notify_hooks(environ={"AVO_NOTIFY_WEBHOOK": webhook_server.url}))
    result = await AgentRuntime(provider=FlakyProvider([]), hooks=hooks).run("x")
    assert result.stop_reason.value == "consecutive_errors"
    titles = [body["title"] for body in webhook_server.requests]
    assert titles == ["avo", "avo run stopped"]
    warning, stopped = webhook_server.requests
    assert "3 consecutive errors" in warning["body"] and warning["level"] == "warning"
    assert result.run_id in stopped["body"] and "consecutive_errors" in stopped["body"]


async def test_completed_run_notifies_once_with_the_output(webhook_server):
    hooks = HookRegistry()
    register_all(hooks, notify_hooks(environ={"AVO_NOTIFY_WEBHOOK": webhook_server.url}))
    provider = FakeProvider([ModelResponse(content="all done")])
    result = await AgentRuntime(provider=provider, hooks=hooks).run("x")
    assert result.status.value == "completed"
    (only,) = webhook_server.requests
    assert only["title"] == "avo run completed" and only["level"] == "info"
    assert "all done" in only["body"]
