"""``avo sandbox run [...] <command>`` with ``--backend auto|docker|bubblewrap``.

``auto`` (the default) uses Docker when an engine answers and bubblewrap
otherwise (see :mod:`avo_sandbox.detect`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from avo.exceptions import AvoError


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``run`` subcommand and its flags (plus ``--backend``)."""
    sub = parser.add_subparsers(dest="sandbox_command", required=True)
    run = sub.add_parser("run", help="run one command in a sandbox")
    run.add_argument(
        "--backend",
        choices=("auto", "docker", "bubblewrap"),
        default="auto",
        help="auto: docker when an engine answers, else bubblewrap (default)",
    )
    run.add_argument("--image", default=None, help="docker image (default python:3.12-slim)")
    run.add_argument(
        "--workspace", type=Path, default=None, help="directory mounted writable (default: cwd)"
    )
    run.add_argument("--network", default="none", help="docker network mode")
    run.add_argument("--memory", default="256m")
    run.add_argument("--timeout", type=float, default=30.0)
    run.add_argument("--env", action="append", default=[], metavar="K=V")
    run.add_argument("--json", action="store_true", help="print the SandboxResult as JSON")
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="command")


def _env(pairs: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise AvoError(f"--env expects KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def build_executor(args: argparse.Namespace, *, docker_client: Any = None) -> Any:
    """The executor the flags ask for."""
    backend = args.backend
    if backend == "auto":
        from avo_sandbox.detect import choose_backend

        backend = "docker" if docker_client is not None else choose_backend()
    if backend == "bubblewrap":
        from avo_sandbox.bubblewrap import BubblewrapExecutor

        if args.network != "none":
            raise AvoError("the bubblewrap backend has no network; drop --network")
        return BubblewrapExecutor(mem_limit=args.memory, timeout_seconds=args.timeout)
    from avo_sandbox.docker_executor import SandboxExecutor

    return SandboxExecutor(
        client=docker_client,
        image=args.image,
        mem_limit=args.memory,
        network_mode=args.network,
        timeout_seconds=args.timeout,
    )


def run(
    args: argparse.Namespace,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    docker_client: Any = None,
) -> int:
    """Run the command; exit with its exit code (2 with ``avo: ...`` on avo errors)."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    command = list(args.argv)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("avo: sandbox run needs a command, e.g. avo sandbox run -- ls -la", file=err)
        return 2
    import shlex

    workspace = (args.workspace or Path.cwd()).resolve()
    if not workspace.is_dir():
        what = "does not exist" if not workspace.exists() else "is not a directory"
        print(f"avo: --workspace {args.workspace} {what}; pass an existing directory", file=err)
        return 2
    try:
        executor = build_executor(args, docker_client=docker_client)
        result = asyncio.run(
            executor.run(
                shlex.join(command),
                workspace_dir=workspace,
                env=_env(args.env),
                timeout_seconds=args.timeout,
            )
        )
    except AvoError as exc:
        print(f"avo: {exc}", file=err)
        return 2
    if args.json:
        print(json.dumps(asdict(result), indent=2), file=out)
    else:
        out.write(result.stdout)
        err.write(result.stderr)
    return int(result.exit_code)


def main(argv: list[str] | None = None) -> int:
    """Standalone entry: ``python -m avo_sandbox.cli run ...``."""
    parser = argparse.ArgumentParser(prog="avo sandbox")
    configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
