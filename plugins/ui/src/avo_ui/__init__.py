"""avo-ui: the runs of an avo event store in the browser.

``avo ui`` serves, on 127.0.0.1 by default, a runs list (search, filters,
server-side pages), each run's timeline (live while it works), approvals,
cancel / resume / steer, starting a run, comparing two runs, sessions and the
installed plugins. Every action is the kernel operation the CLI calls
(:mod:`avo.ops`); the pages keep no run state of their own, they read the
store on every request. :func:`avo_ui.app.create_app` builds the ASGI app.
"""

from __future__ import annotations

__all__: list[str] = []
