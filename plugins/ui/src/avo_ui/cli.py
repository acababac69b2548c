"""``avo ui``: serve the UI for the workspace's event store.

Binds 127.0.0.1 unless ``--host`` says otherwise; any other address needs a
token (``--token``, ``AVO_UI_TOKEN``, else one is generated and printed once
in the link). ``--port 0`` picks a free port; the first line printed is the
address to open (tests read it).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from avo.exceptions import AvoError, ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    """``avo ui`` flags."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=8765, help="port (0: any free port; default 8765)"
    )
    parser.add_argument(
        "--token",
        default=None,
        help="access token (default: $AVO_UI_TOKEN; generated for non-loopback binds)",
    )
    parser.add_argument("--config", "-c", default=None, metavar="FILE", help="avo.toml to use")
    parser.add_argument("-d", "--database", default=None, metavar="LOCATION", help="event store")
    parser.add_argument(
        "--workspace", default=None, metavar="DIR", help="where runs started here work (default: .)"
    )


async def _open_store(args: Any, workspace: Path, environ: Any) -> Any:
    from avo.compose import open_store
    from avo.compose.resolve import resolve_config

    resolved = resolve_config(args.config, environ=environ, cwd=workspace, database=args.database)
    table = resolved.config.store
    from_flag = args.database is not None
    store = open_store(
        resolved.store_location,
        name=None if from_flag or table is None else table.name,
        settings=None if from_flag or table is None else table.settings,
        environ=environ,
    )
    if inspect.isawaitable(store):
        store = await store
    return store, resolved.store_location


async def serve(args: Any) -> int:
    import uvicorn

    from avo.gc_tuning import server_gc_thresholds, tune_gc_for_server
    from avo_ui.app import create_app
    from avo_ui.security import Guard

    environ = getattr(args, "avo_environ", None) or os.environ
    server_gc_thresholds(environ)  # a bad AVO_SERVER_GC is refused before anything starts
    workspace = args.workspace_dir
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a port; use 0-65535 (0: any free port)")
    guard, generated = Guard.for_bind(args.host, args.token or environ.get("AVO_UI_TOKEN") or None)
    store, location = await _open_store(args, workspace, environ)
    app = create_app(store, guard=guard, workspace=workspace, config=args.config, environ=environ)
    # gathered before the link is printed, so the first page does not pay for them
    facets = await app.state.ui.facet_values()
    for provider, model in facets.models[:20]:
        app.state.ui.prices.lookup(provider, model)  # loads the plugins' catalogs
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    original = server.startup

    async def startup(sockets: Any = None) -> None:
        await original(sockets=sockets)
        tune_gc_for_server(environ)  # started: freeze what start-up loaded (docs/operations.md)
        bound = server.servers[0].sockets[0].getsockname()
        host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        link = f"http://{host}:{bound[1]}/"
        if generated:
            link += f"?token={guard.token}"
        print(f"avo ui: {link}", flush=True)
        print(f"store: {location}", flush=True)
        if generated:
            print("the token is shown once; anyone with the link can act on runs", flush=True)

    server.startup = startup  # type: ignore[method-assign]
    try:
        await server.serve()
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            await close()
    return 0


def run(args: Any) -> int:
    """Serve until Ctrl-C or SIGTERM (both stop it the same way: store closed, exit 0)."""
    # uvicorn finishes its graceful shutdown on SIGTERM and then raises the signal again
    # with the handler it found: the default one would kill the process (exit -15, no
    # atexit). Handled as Ctrl-C instead, as a service manager's stop expects.
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler) if main else None
    try:
        workspace = Path(args.workspace or Path.cwd()).expanduser().resolve()
        if not workspace.is_dir():
            raise ConfigError(
                f"--workspace {args.workspace}: not a directory; give the folder runs work in",
                key="workspace",
            )
        args.workspace_dir = workspace
        return asyncio.run(serve(args))
    except AvoError as exc:
        print(f"avo ui: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
