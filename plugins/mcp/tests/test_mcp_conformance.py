"""The official MCP conformance suite against ``avo serve-mcp --http`` and avo's client.

``@modelcontextprotocol/conformance`` (npm, pinned in tests/interop/
package-lock.json, installed by scripts/ensure-mcp-interop.sh). Every scenario
is listed below either as passing or with the reason it does not apply; the
suite's own ``--expected-failures`` baseline makes an unexpected failure *and*
a newly passing scenario fail this test, so the lists cannot go stale.
docs/mcp.md carries the same table.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import free_port, stop_process, wait_for_port

TESTS_DIR = Path(__file__).resolve().parent

SERVER_PASSES = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "completion-complete",
    "tools-list",
    "resources-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    # These two call fixture tools avo does not have; the suite's checks accept
    # the error result avo answers with, so they pass without saying much.
    "tools-call-simple-text",
    "tools-call-error",
]
FIXTURE = "needs the suite's fixture {what} (test_*), which avo's tool registry does not have"
SERVER_NOT_APPLICABLE = {
    "tools-call-image": FIXTURE.format(what="tool test_image_content"),
    "tools-call-audio": FIXTURE.format(what="tool test_audio_content"),
    "tools-call-embedded-resource": FIXTURE.format(what="tool test_embedded_resource"),
    "tools-call-mixed-content": FIXTURE.format(what="tool test_multiple_content_types"),
    "tools-call-with-logging": FIXTURE.format(what="tool test_tool_with_logging"),
    "tools-call-with-progress": FIXTURE.format(what="tool test_tool_with_progress"),
    "tools-call-sampling": FIXTURE.format(what="tool test_sampling"),
    "tools-call-elicitation": FIXTURE.format(what="tool test_elicitation"),
    "elicitation-sep1034-defaults": FIXTURE.format(what="tool test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": FIXTURE.format(what="tool test_elicitation_sep1330_enums"),
    "json-schema-2020-12": FIXTURE.format(what="tool json_schema_2020_12_tool"),
    "resources-read-text": FIXTURE.format(what="resource test://static-text"),
    "resources-read-binary": FIXTURE.format(what="resource test://static-binary"),
    "resources-templates-read": FIXTURE.format(what="template test://template/{id}/data"),
    "resources-subscribe": "avo serves no resource subscriptions (declared subscribe: false)",
    "resources-unsubscribe": "avo serves no resource subscriptions (declared subscribe: false)",
    "prompts-list": "avo serves no prompts and does not declare the capability",
    "prompts-get-simple": "avo serves no prompts and does not declare the capability",
    "prompts-get-with-args": "avo serves no prompts and does not declare the capability",
    "prompts-get-embedded-resource": "avo serves no prompts and does not declare the capability",
    "prompts-get-with-image": "avo serves no prompts and does not declare the capability",
}
# server-sse-polling has no verdict either way: it needs the fixture tool
# test_reconnection and an event-stream answer (avo answers POSTs with JSON).

AUTH_CODE_SCENARIOS = [
    "metadata-default",
    "metadata-var1",
    "metadata-var2",
    "metadata-var3",
    "basic-cimd",
    "scope-from-www-authenticate",
    "scope-from-scopes-supported",
    "scope-omitted-when-undefined",
    "scope-step-up",
    "scope-retry-limit",
    "token-endpoint-auth-basic",
    "token-endpoint-auth-post",
    "token-endpoint-auth-none",
    "resource-mismatch",
    "pre-registration",
    "2025-03-26-oauth-metadata-backcompat",
    "2025-03-26-oauth-endpoint-fallback",
]
CLIENT_PASSES = [
    "initialize",
    "tools_call",
    "sse-retry",
    # OAuth 2.1: discovery, registration (dynamic, metadata document,
    # pre-registered), PKCE, loopback redirect, scopes, step-up, token
    # endpoint authentication, and the client-credentials grant.
    *(f"auth/{name}" for name in AUTH_CODE_SCENARIOS),
    "auth/client-credentials-basic",
    "elicitation-sep1034-client-defaults",
]
CLIENT_NOT_APPLICABLE = {
    "auth/client-credentials-jwt": (
        "private_key_jwt client authentication needs an ES256 signer; avo-mcp has no "
        "crypto dependency and says so"
    ),
}


def _conformance(interop_dir: Path) -> list[str]:
    return [
        "node",
        str(interop_dir / "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
    ]


def _avo() -> list[str]:
    found = shutil.which("avo", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "avo.cli"]


def _baseline(tmp_path: Path, mode: str, names: list[str]) -> Path:
    path = tmp_path / "expected-failures.yml"
    path.write_text(f"{mode}: {json.dumps(names)}\n")  # JSON is YAML
    return path


def _passed(output: str) -> set[str]:
    return set(re.findall(r"^✓ (\S+): \d+ passed", output, flags=re.MULTILINE))


def test_conformance_suite_lists_match(interop_dir: Path) -> None:
    done = subprocess.run(
        [*_conformance(interop_dir), "list"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    server_part, client_part = done.stdout.split("Client scenarios")
    server = set(re.findall(r"^\s+- (\S+)", server_part, flags=re.MULTILINE))
    client = set(re.findall(r"^\s+- (\S+)", client_part, flags=re.MULTILINE))
    assert server == {*SERVER_PASSES, *SERVER_NOT_APPLICABLE, "server-sse-polling"}
    assert client == {*CLIENT_PASSES, *CLIENT_NOT_APPLICABLE}


def test_server_conformance_against_avo_serve_mcp_http(interop_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("# notes\n")
    port = free_port()
    server = subprocess.Popen(
        [*_avo(), "serve-mcp", "--http", "--port", str(port), "--workspace-root", str(workspace)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, server, "avo serve-mcp --http")
        baseline = _baseline(tmp_path, "server", sorted(SERVER_NOT_APPLICABLE))
        done = subprocess.run(
            [
                *_conformance(interop_dir),
                "server",
                "--url",
                f"http://localhost:{port}/mcp",
                "--expected-failures",
                str(baseline),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
    finally:
        stop_process(server)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert _passed(output) == set(SERVER_PASSES), output[-4000:]


@pytest.mark.parametrize("scenario", [*CLIENT_PASSES, *CLIENT_NOT_APPLICABLE])
def test_client_conformance_of_avos_client(
    interop_dir: Path, tmp_path: Path, scenario: str
) -> None:
    expected_to_fail = scenario in CLIENT_NOT_APPLICABLE
    baseline = _baseline(tmp_path, "client", [scenario] if expected_to_fail else [])
    client = f"{sys.executable} {TESTS_DIR / 'conformance' / 'avo_client.py'}"
    done = subprocess.run(
        [
            *_conformance(interop_dir),
            "client",
            "--command",
            client,
            "--scenario",
            scenario,
            "--expected-failures",
            str(baseline),
            "--timeout",
            "60000",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    if scenario == "auth/client-credentials-jwt":
        assert "private_key_jwt client authentication is not supported" in output, output[-4000:]
    if scenario == "auth/resource-mismatch":
        assert "publishes metadata for another resource" in output
