"""avo chat: keystroke-to-first-token latency, and keystroke echo while a tool runs.

Drives the real ``avo chat`` in a pseudo-terminal (pexpect), with the scripted
fake provider streaming its answer in pieces and an SQLite store. Measured,
each over many turns or keystrokes, in the same run:

- **first token**: from the Enter key to the first piece of the answer on the
  screen (composition of the run, its first events and checkpoint in SQLite,
  the model call, rendering) — target < 50 ms;
- **echo, idle**: from a keystroke to its echo in the input (the baseline: what
  the terminal stack itself costs);
- **echo while a tool runs**: the same while a blocking tool (a 10 s sleep)
  runs in the agent — the input must not wait for the agent;
- **bare runtime first token**: the same turn driven in-process without the
  chat (AgentRuntime + SQLite), so the chat's own share shows.

Prints medians, 90th percentiles and ratios. ``--turns N`` (default 30).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pexpect

TOKEN = b"QZ"
ANSWER = "QZ-the answer, streamed in pieces of two characters."

WAIT_TOOL = """
import time
from pydantic import BaseModel
from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides

class WaitArgs(BaseModel):
    seconds: float = 1.0

def make(settings):
    from avo.tools import FunctionTool
    def wait(args):
        time.sleep(args.seconds)
        return "waited"
    return FunctionTool(name="wait", description="Wait.", arguments_model=WaitArgs,
                        function=wait, risk=ToolRisk.INSPECT)

plugin = provides(ToolSpec(name="wait", factory=make, risk=ToolRisk.INSPECT))
"""


def _config(tools: bool) -> str:
    if tools:
        script = (
            "[[provider.settings.script]]\n"
            'tool_call = {name = "wait", arguments = {seconds = 10}}\n\n'
            '[[provider.settings.script]]\ncontent = "done"\n'
        )
    else:
        script = (
            "[[provider.settings.script]]\n"
            f'content = "{ANSWER}"\n'
            "usage = {input_tokens = 100, output_tokens = 10}\n"
        )
    return textwrap.dedent(
        f"""
        tools = [{'"wait"' if tools else ""}]

        [provider]
        name = "fake"

        [provider.settings]
        chunk_chars = 2
        chunk_delay_ms = 2
        repeat_last = true

        {script}
        [store]
        location = "chat.db"

        [permission]
        mode = "bypass_permissions"
        """
    )


def _env(home: Path, site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        AVO_PLUGINS_CACHE="0",
        TERM="xterm-256color",
        PYTHONPATH=str(site),
    )
    return env


class Chat:
    def __init__(self, workspace: Path, env: dict[str, str]) -> None:
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "avo.cli", "chat"],
            cwd=str(workspace),
            env=env,
            dimensions=(40, 120),
        )
        self.child.delaybeforesend = None  # pexpect sleeps 50 ms before each send by default
        self.seen = b""

    def read_until(self, needle: bytes, since: int, timeout: float = 30) -> float:
        deadline = time.perf_counter() + timeout
        while needle not in self.seen[since:]:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"never saw {needle!r}")
            try:
                data = self.child.read_nonblocking(65536, timeout=0.001)
            except pexpect.TIMEOUT:
                continue
            if b"\x1b[6n" in data:  # answer cursor position requests as a terminal does
                self.child.send("\x1b[1;1R" * data.count(b"\x1b[6n"))
            self.seen += data
        return time.perf_counter()

    def drain(self, seconds: float) -> None:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            try:
                data = self.child.read_nonblocking(65536, timeout=0.01)
                if b"\x1b[6n" in data:
                    self.child.send("\x1b[1;1R" * data.count(b"\x1b[6n"))
                self.seen += data
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                return

    def echo(self, char: str) -> float:
        mark = len(self.seen)
        started = time.perf_counter()
        self.child.send(char)
        return self.read_until(char.encode(), mark) - started

    def close(self) -> None:
        self.child.sendcontrol("d")
        self.drain(1.0)
        self.child.terminate(force=True)


def _site(root: Path) -> Path:
    from avo.testing.plugins import write_distribution

    site = root / "site"
    if site.exists():
        return site
    write_distribution(
        site,
        "avo-bench-wait",
        entry_points={"avo.tools": {"wait": "avo_bench_wait:plugin"}},
        modules={"avo_bench_wait": WAIT_TOOL},
    )
    return site


def first_tokens(root: Path, turns: int) -> tuple[list[float], list[float]]:
    workspace = root / "ws-answer"
    workspace.mkdir()
    (workspace / "avo.toml").write_text(_config(tools=False))
    chat = Chat(workspace, _env(root / "home", _site(root)))
    chat.read_until(b"/help lists commands", 0, timeout=60)
    chat.drain(0.5)
    firsts, echoes = [], []
    for turn in range(turns):
        for char in f"ping{turn}":
            echoes.append(chat.echo(char))
        mark = len(chat.seen)
        started = time.perf_counter()
        chat.child.send("\r")
        firsts.append(chat.read_until(TOKEN, mark) - started)
        chat.read_until(b"two characters.", mark)
        chat.drain(0.3)
    chat.close()
    return firsts, echoes


def echo_while_tool(root: Path, keys: int) -> list[float]:
    workspace = root / "ws-tool"
    workspace.mkdir()
    (workspace / "avo.toml").write_text(_config(tools=True))
    chat = Chat(workspace, _env(root / "home", _site(root)))
    chat.read_until(b"/help lists commands", 0, timeout=60)
    chat.drain(0.5)
    mark = len(chat.seen)
    chat.child.send("wait\r")
    chat.read_until(b"10", mark)  # the tool's live line (its argument): it is running
    chat.drain(0.3)
    latencies = [chat.echo(c) for c in ("abcdefghijklmnopqrstuvwxyz" * 4)[:keys]]
    still_running = b"\xe2\x9c\x93 wait" not in chat.seen  # no ✓ yet
    chat.child.sendcontrol("c")
    chat.close()
    if not still_running:
        raise RuntimeError("the tool finished before the keystrokes were measured")
    return latencies


async def bare_first_tokens(root: Path, turns: int) -> list[float]:
    from avo import AgentRuntime
    from avo.compose import open_store
    from avo.providers.fake import FakeProvider

    store = open_store(str(root / "bare.db"))
    if asyncio.iscoroutine(store):
        store = await store
    firsts: list[float] = []
    seen: dict[str, float] = {}

    def on_text(text: str) -> None:
        seen.setdefault("first", time.perf_counter())

    provider = FakeProvider(
        [{"content": ANSWER}], repeat_last=True, chunk_chars=2, chunk_delay=0.002
    )
    runtime = AgentRuntime(provider=provider, event_store=store, stream_callback=on_text)
    for _ in range(turns):
        seen.clear()
        started = time.perf_counter()
        await runtime.run("ping")
        firsts.append(seen["first"] - started)
    await store.close()
    return firsts


def _row(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (
        f"{name:<34} median {statistics.median(values) * 1000:7.2f} ms   p90 {p90 * 1000:7.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        firsts, echoes = first_tokens(root, args.turns)
        busy = echo_while_tool(root, 40)
        bare = asyncio.run(bare_first_tokens(root, args.turns))
    print(f"avo chat latency ({args.turns} turns, SQLite store, scripted provider)")
    print(_row("keystroke echo, idle (baseline)", echoes))
    print(_row("keystroke echo, a tool running", busy))
    print(_row("Enter -> first token on screen", firsts))
    print(_row("bare runtime: run() -> first token", bare))
    echo, first = statistics.median(echoes), statistics.median(firsts)
    print(f"ratio echo while a tool runs / idle echo:   {statistics.median(busy) / echo:6.2f}x")
    print(f"ratio first token / idle echo:              {first / echo:6.2f}x")
    print(f"ratio first token / bare runtime:           {first / statistics.median(bare):6.2f}x")
    print(
        f"first token vs the 50 ms target:            {first * 1000 / 50:6.2f}x "
        f"({'within' if first < 0.05 else 'OVER'} target)"
    )


if __name__ == "__main__":
    main()
