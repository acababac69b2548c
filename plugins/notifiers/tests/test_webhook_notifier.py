import pytest

from avo.exceptions import ConfigError, NotifierError
from avo_notifiers import Notification, WebhookNotifier


async def no_sleep(_: float) -> None:
    return None


async def test_posts_json_to_real_server(webhook_server):
    notifier = WebhookNotifier(webhook_server.url, sleep=no_sleep)
    await notifier.send(Notification("Run done", "all good", "info"))
    assert webhook_server.requests == [
        {"title": "Run done", "body": "all good", "level": "info", "text": "Run done\nall good"}
    ]
    assert webhook_server.paths == ["/services/T000/B000/s3cr3tpathvalue"]
    assert notifier.attempts == 1


async def test_retries_5xx_then_succeeds(webhook_server):
    webhook_server.statuses = [503, 500]
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    notifier = WebhookNotifier(webhook_server.url, retries=2, backoff=0.25, sleep=sleep)
    await notifier.send(Notification("t", "b"))
    assert notifier.attempts == 3 and len(webhook_server.requests) == 3
    assert delays == [0.25, 0.5]


async def test_gives_up_after_retries_without_leaking_the_path(webhook_server):
    webhook_server.statuses = [502, 502, 502]
    notifier = WebhookNotifier(webhook_server.url, retries=2, sleep=no_sleep)
    with pytest.raises(NotifierError, match="failed after 3 attempts") as info:
        await notifier.send(Notification("t", "b"))
    assert "HTTP 502" in str(info.value)
    assert "s3cr3tpathvalue" not in str(info.value)
    assert "s3cr3tpathvalue" not in repr(notifier)


async def test_4xx_is_not_retried(webhook_server):
    webhook_server.statuses = [404]
    notifier = WebhookNotifier(webhook_server.url, retries=3, sleep=no_sleep)
    with pytest.raises(NotifierError, match="rejected"):
        await notifier.send(Notification("t", "b"))
    assert len(webhook_server.requests) == 1


async def test_timeout_is_retried_then_reported(webhook_server):
    webhook_server.hang.set()
    notifier = WebhookNotifier(webhook_server.url, timeout=0.2, retries=1, sleep=no_sleep)
    with pytest.raises(NotifierError, match=r"timed out after 0\.2s"):
        await notifier.send(Notification("t", "b"))
    assert notifier.attempts == 2


async def test_connection_refused_is_reported():
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    notifier = WebhookNotifier(f"http://127.0.0.1:{port}/hook", retries=1, sleep=no_sleep)
    with pytest.raises(NotifierError, match="failed after 2 attempts"):
        await notifier.send(Notification("t", "b"))


def test_invalid_configuration():
    with pytest.raises(ConfigError, match="http"):
        WebhookNotifier("ftp://example/x")
    with pytest.raises(ConfigError, match="timeout"):
        WebhookNotifier("http://127.0.0.1/x", timeout=0)
    with pytest.raises(ConfigError, match="retries"):
        WebhookNotifier("http://127.0.0.1/x", retries=-1)
    with pytest.raises(ValueError, match="level"):
        Notification("t", "b", level="loud")
