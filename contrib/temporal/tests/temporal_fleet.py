"""The avo-temporal tests' workspace: avo.toml, the test plugin distribution, worker processes.

(A module with its own name, not conftest: several packages' conftests share one
test session, and ``from conftest import`` would find another package's.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from loop_plugin import MCP_SOURCE, SOURCE

from avo.testing.plugins import write_distribution


class Fleet:
    """One test's workspace: avo.toml, the plugin distribution, workers, the effect file."""

    def __init__(self, root: Path, address: str, *, store: str, store_settings: str = "") -> None:
        self.root = root
        self.address = address
        self.queue = f"q-{uuid.uuid4().hex[:10]}"
        self.effects = root / "effects.txt"
        self.plugins = root / "plugins"
        write_distribution(
            self.plugins,
            "avo-temporal-testloop",
            entry_points={
                "avo.providers": {"loop": "avo_temporal_testloop:provider"},
                "avo.tools": {"append_line": "avo_temporal_testloop:tool"},
            },
            modules={"avo_temporal_testloop": SOURCE, "avo_temporal_testmcp": MCP_SOURCE},
        )
        self.store = store
        self.store_settings = store_settings
        self.workers: list[subprocess.Popen[str]] = []
        self.config = root / "avo.toml"
        self.write_config()

    def write_config(
        self,
        *,
        calls: int = 3,
        delay: float = 0.0,
        latency: float = 0.0,
        char_delay: float = 0.0,
        mode: str = "bypass_permissions",
        hooks: str = "",
        tool_settings: str = "",
        provider_settings: str = "",
        extra: str = "",
    ) -> None:
        self.config.write_text(
            f'tools = [{{name = "append_line", settings = {{path = "{self.effects}", '
            f"delay = {delay}{tool_settings}}}}}]\n"
            f"{hooks}"
            f'[permission]\nmode = "{mode}"\n'
            # a busy machine queues calls for minutes: keep the policy's limits out of the way
            "[policy]\nmax_runtime_seconds = 3600\n"
            "provider_timeout_seconds = 600\ntool_timeout_seconds = 600\n"
            f'[provider]\nname = "loop"\n[provider.settings]\ncalls = {calls}\n'
            f"latency = {latency}\nchar_delay = {char_delay}\n{provider_settings}"
            f'[store]\nlocation = "{self.store}"\n{self.store_settings}'
            f'[engine]\nname = "temporal"\n[engine.settings]\naddress = "{self.address}"\n'
            f'task_queue = "{self.queue}"\nheartbeat_seconds = 2\n{extra}',
            encoding="utf-8",
        )

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AVO_", "COV_", "PYTEST"))}
        env["PYTHONPATH"] = os.pathsep.join([str(self.plugins), env.get("PYTHONPATH", "")])
        env["AVO_CONFIG_DIR"] = str(self.root / "home")
        return env

    def avo(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run the avo CLI in this workspace (a fresh process that never ran a worker)."""
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from avo.cli import main; sys.exit(main())", *args],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"avo {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done

    def start_worker(self, *extra: str) -> subprocess.Popen[str]:
        with (self.root / f"worker-{len(self.workers)}.log").open("w") as log:
            worker = self._spawn(log, *extra)
        self.workers.append(worker)
        return worker

    def _spawn(self, log: Any, *extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from avo.cli import main; sys.exit(main())",
                "worker",
                "--engine",
                "temporal",
                "--exit-with-parent",  # a killed test or benchmark leaves no worker behind
                *extra,
            ],
            cwd=self.root,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.root.glob("worker-*.log")))

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.terminate()
        deadline = time.monotonic() + 20
        for worker in self.workers:
            try:
                worker.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


async def submit(fleet: Fleet, task: str) -> str:
    """Submit ``task`` to the fleet's queue without following it; returns the run id."""
    from avo.engines import RunSubmission
    from avo.models import new_id
    from avo_temporal.engine import TemporalEngine

    engine = TemporalEngine({"address": fleet.address, "task_queue": fleet.queue}, environ={})
    return await engine.submit(RunSubmission(task=task, run_id=new_id()))
