"""Pages over HTTP: a long run's page is streamed whole; the sessions page lists sessions."""

from __future__ import annotations

import http.client
import textwrap
from urllib.parse import urlsplit

from ui_kit import Server, Workspace

STEPS = 90


def _long_config() -> str:
    steps = "".join(
        textwrap.dedent(
            f"""
            [[provider.settings.script]]
            tool_call = {{name = "read_file", arguments = {{path = "notes.md"}}}}
            usage = {{input_tokens = {100 + i}, output_tokens = 7}}
            """
        )
        for i in range(STEPS)
    )
    return textwrap.dedent(
        f"""
        tools = ["read_file"]

        [provider]
        name = "fake"
        {steps}
        [[provider.settings.script]]
        content = "read it {STEPS} times"

        [policy]
        max_steps = {STEPS + 5}
        repeated_action_limit = {STEPS + 5}
        no_progress_window = {STEPS + 5}

        [store]
        location = "runs.db"
        """
    )


def _get(url: str, path: str) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", urlsplit(url).port, timeout=60)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return response.status, headers, response.read().decode()
    finally:
        conn.close()


def test_a_long_run_page_is_streamed_whole(workspace: Workspace) -> None:
    (workspace.root / "long.toml").write_text(_long_config(), encoding="utf-8")
    done = workspace.avo("run", "-c", "long.toml", "read the notes many times")
    assert done.returncode == 0, done.stderr
    (run,) = workspace.runs()
    assert run["steps"] == STEPS + 1
    server = Server(workspace)
    try:
        status, headers, body = _get(server.url, f"/runs/{run['run_id']}")
        assert status == 200
        assert headers.get("transfer-encoding") == "chunked"  # sent as it renders
        assert body.count('class="item k-result') == STEPS
        assert "read it 90 times" in body and body.rstrip().endswith("</html>")
        status, headers, short = _get(server.url, "/sessions")
        assert status == 200 and "content-length" in headers
        assert short.count("last run") == 1  # `avo run` made one session with this run
    finally:
        server.close()


QUESTION = """
tools = ["ask_user"]

[provider]
name = "fake"

[[provider.settings.script]]
tool_call.name = "ask_user"
tool_call.arguments = {question = "Which file then?", choices = ["notes.md", "todo.md"]}

[[provider.settings.script]]
content = "I will use the file you chose."

[store]
location = "runs.db"
"""


def _post(url: str, path: str, form: str) -> tuple[int, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", urlsplit(url).port, timeout=60)
    try:
        headers = {"Origin": url, "Content-Type": "application/x-www-form-urlencoded"}
        conn.request("POST", path, body=form, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def test_a_question_is_answered_from_its_page_and_the_run_goes_on(workspace: Workspace) -> None:
    import re
    import time

    (workspace.root / "question.toml").write_text(QUESTION, encoding="utf-8")
    done = workspace.avo("run", "-c", "question.toml", "pick a file")
    assert done.returncode == 3, done.stderr  # paused for a person
    (run,) = workspace.runs()
    server = Server(workspace, "-c", "question.toml")
    try:
        status, _, page = _get(server.url, f"/runs/{run['run_id']}")
        assert status == 200 and "question from ask_user" in page and "Which file then?" in page
        assert '<option value="todo.md">' in page
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        call_id = re.search(r'name="call_id" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        status, headers = _post(
            server.url,
            f"/runs/{run['run_id']}/answer",
            f"csrf={csrf}&call_id={call_id}&text=todo.md&continue=1",
        )
        assert status == 303 and "error" not in headers["location"]
        deadline = time.monotonic() + 60
        while workspace.runs()[0]["state"] != "completed" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert workspace.runs()[0]["state"] == "completed"
        _, _, page = _get(server.url, f"/runs/{run['run_id']}")
        assert "answered by web via web" in page and "todo.md" in page
    finally:
        server.close()


MCP_FORM = """
[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {{name = "sdk__book_table", arguments = {{place = "Ito"}}}}

[[provider.settings.script]]
content = "booked it"

[permission]
mode = "bypass_permissions"

[store]
location = "runs.db"

[mcp]
user_servers = false
[mcp.servers.sdk]
command = {command}
env = {{SDK_BOOKINGS = "{bookings}"}}
"""


def test_an_mcp_servers_form_is_answered_from_the_runs_page(workspace: Workspace) -> None:
    """An MCP server's elicitation: the page shows the form's fields, a misfit is refused
    (nothing recorded), a fitting answer continues the run and the server books once."""
    import json
    import re
    import sys
    import time
    from pathlib import Path
    from urllib.parse import quote

    server_py = Path(__file__).resolve().parents[2] / "mcp" / "tests" / "sdk_server.py"
    bookings = workspace.root / "bookings.txt"
    command = json.dumps([sys.executable, str(server_py)])
    config = MCP_FORM.format(command=command, bookings=bookings)
    (workspace.root / "form.toml").write_text(config, encoding="utf-8")
    done = workspace.avo("run", "-c", "form.toml", "book a table", check=False)
    assert done.returncode == 3, done.stderr
    (run,) = workspace.runs()
    server = Server(workspace, "-c", "form.toml")
    try:
        status, _, page = _get(server.url, f"/runs/{run['run_id']}")
        assert status == 200 and "Which day should I book Ito?" in page
        assert 'data-field="date"' in page and 'name="f.seats"' in page  # the form's fields
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        call_id = re.search(r'name="call_id" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        path = f"/runs/{run['run_id']}/answer"
        form = f"csrf={csrf}&call_id={call_id}&continue=1&text="
        status, headers = _post(server.url, path, form + quote('{"seats": 40}'))
        assert status == 303 and "error" in headers["location"]
        # A refused form comes back with what was typed in its fields, however long.
        long_date = ", ".join(["the first free evening"] * 250)  # 5,998 characters
        fields = f"csrf={csrf}&call_id={call_id}&form=1&f.date={quote(long_date)}&f.seats=40"
        status, headers = _post(server.url, path, fields)
        assert status == 303 and "error" in headers["location"]
        assert len(headers["location"]) < 1_000  # the values stay in the server
        status, _, page = _get(server.url, headers["location"])
        assert status == 200 and f'value="{long_date}"' in page and 'value="40"' in page
        status, headers = _post(server.url, path, form + quote('{"date": "2026-05-01"}'))
        assert status == 303 and "error" not in headers["location"]
        deadline = time.monotonic() + 90
        while workspace.runs()[0]["state"] != "completed" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert workspace.runs()[0]["state"] == "completed"
        assert bookings.read_text() == "Ito on 2026-05-01 for 2\n"
    finally:
        server.close()


MCP_PROGRESS = """
[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {{name = "sdk__count", arguments = {{to = 3}}}}

[[provider.settings.script]]
content = "counted"

[permission]
mode = "bypass_permissions"

[store]
location = "runs.db"

[mcp]
user_servers = false
progress = "log"
[mcp.servers.sdk]
command = {command}
"""


def test_an_mcp_servers_progress_shows_on_the_runs_page(workspace: Workspace) -> None:
    """A server's progress notifications are tool_progress events: the run page lists them."""
    import json
    import sys
    from pathlib import Path

    server_py = Path(__file__).resolve().parents[2] / "mcp" / "tests" / "sdk_server.py"
    command = json.dumps([sys.executable, str(server_py)])
    (workspace.root / "count.toml").write_text(MCP_PROGRESS.format(command=command), "utf-8")
    workspace.avo("run", "-c", "count.toml", "count")
    (run,) = workspace.runs()
    server = Server(workspace, "-c", "count.toml")
    try:
        status, _, page = _get(server.url, f"/runs/{run['run_id']}")
        assert status == 200
        assert "sdk__count progress 1/3 · step 1" in page
        assert "sdk__count progress 3/3 · step 3" in page  # the newest, when the call ended
    finally:
        server.close()


MCP_SAMPLING = """
[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {{name = "sdk__summarize", arguments = {{text = "a very long story"}}}}

[[provider.settings.script]]
content = "a short story"

[[provider.settings.script]]
content = "summarized"

[permission]
mode = "bypass_permissions"
[[permission.ask]]
tool = "mcp_sampling"

[store]
location = "runs.db"

[mcp]
user_servers = false
[mcp.servers.sdk]
command = {command}
"""


def test_an_mcp_servers_sampling_is_allowed_from_the_runs_page(workspace: Workspace) -> None:
    """A server's sampling request a person must allow: the run page asks yes/no, a yes
    continues the run and the server's request runs on the run's model."""
    import json
    import re
    import sys
    import time
    from pathlib import Path

    server_py = Path(__file__).resolve().parents[2] / "mcp" / "tests" / "sdk_server.py"
    command = json.dumps([sys.executable, str(server_py)])
    (workspace.root / "sample.toml").write_text(MCP_SAMPLING.format(command=command), "utf-8")
    done = workspace.avo("run", "-c", "sample.toml", "summarize", check=False)
    assert done.returncode == 3, done.stderr
    (run,) = workspace.runs()
    server = Server(workspace, "-c", "sample.toml")
    try:
        status, _, page = _get(server.url, f"/runs/{run['run_id']}")
        assert status == 200 and "may it use the run&#39;s model" in page
        assert 'name="f.allow"' in page  # the form's one field: a yes/no box
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        call_id = re.search(r'name="call_id" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        form = f"csrf={csrf}&call_id={call_id}&continue=1&form=1&f.allow=1"  # ticked, as posted
        status, headers = _post(server.url, f"/runs/{run['run_id']}/answer", form)
        assert status == 303 and "error" not in headers["location"]
        deadline = time.monotonic() + 90
        while workspace.runs()[0]["state"] != "completed" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert workspace.runs()[0]["state"] == "completed"
        _, _, page = _get(server.url, f"/runs/{run['run_id']}")
        assert "summary: a short story" in page
    finally:
        server.close()
