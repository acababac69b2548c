"""What a person can do from the UI, each the kernel operation the CLI runs.

approve / deny / answer a question (``avo.ops.approve`` / ``deny`` /
``answer``; a tool's form is posted field by field, :mod:`avo_ui.forms`;
then optionally
``avo.ops.resume`` to continue), cancel (``avo.ops.cancel``), resume
(``avo.ops.resume``), steer (``avo.ops.steer`` into the run this server
drives), and start a run from a task with the workspace's avo.toml
(``avo.compose.compose`` + ``AgentRuntime.run``, as ``avo run`` does). A run
this server resumes or starts is driven by a background task in the server's
process, holding the run's lease like any other driver.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from avo.exceptions import AvoError
from avo.models import new_id
from avo_ui.app import UI, _run_or_404, _ui

ACTIONS = ("approve", "deny", "answer", "cancel", "resume", "steer")
MAX_TASK = 100_000
KEPT_FORMS = 64  # refused forms' values kept to show again (the oldest go first)


async def _form(request: Request) -> dict[str, str]:
    ui = _ui(request)
    form = await request.form()
    values = {k: str(v) for k, v in form.items()}
    offered = values.get("csrf") or request.headers.get("x-csrf-token")
    if not ui.guard.csrf_ok(offered):
        raise HTTPException(
            403, "this form is stale or not from this UI (CSRF token); reload the page"
        )
    return values


def _back(
    run_id: str,
    error: str | None = None,
    given: tuple[str, str] | None = None,
    ui: UI | None = None,
) -> Response:
    """Back to the run's page; ``given``: (call id, the refused form's JSON) to show again.

    The values stay in this server (``ui.refills``) under a random key the
    address carries, so an answer of any length comes back whole.
    """
    target = f"/runs/{run_id}"
    if error:
        target += "?error=" + quote(error)
        if given is not None and ui is not None:
            key = secrets.token_urlsafe(12)
            ui.refills[key] = given
            while len(ui.refills) > KEPT_FORMS:
                del ui.refills[next(iter(ui.refills))]
            target += "&refill=" + key
    return RedirectResponse(target, 303)


def _drive(ui: UI, run_id: str, work: Any) -> None:
    """Run ``work`` (a coroutine driving ``run_id``) in the background, recording its failure."""

    async def driver() -> None:
        try:
            await work
        except AvoError as exc:
            ui.errors[run_id] = str(exc)
        except Exception as exc:
            ui.errors[run_id] = f"{type(exc).__name__}: {exc}"

    ui.errors.pop(run_id, None)
    ui.tasks[run_id] = asyncio.get_running_loop().create_task(driver())


def _resume(ui: UI, run_id: str) -> None:
    from avo.ops import resume
    from avo.ops.leases import owner_name

    _drive(ui, run_id, resume(ui.store, run_id, environ=ui.environ, owner=owner_name("avo-ui")))


async def _form_answer(ui: UI, request: Request, run_id: str, call_id: str | None) -> str:
    """The posted fields of a tool's form as the JSON object ``avo.ops.answer`` reads."""
    from avo.ops import pending_requests
    from avo_ui.forms import answer_text

    asked = [r for r in await pending_requests(ui.store, run_id) if r.tool_call_id == call_id]
    if not asked or asked[0].schema is None:
        return "{}"  # answered meanwhile (or no form): avo.ops.answer says what happened
    return answer_text(asked[0].schema, await request.form())


async def act(request: Request) -> Response:
    ui = _ui(request)
    run_id, action = request.path_params["run_id"], request.path_params["action"]
    if action not in ACTIONS:
        raise HTTPException(404, f"no action {action!r}; the UI can {', '.join(ACTIONS)}")
    values = await _form(request)
    await _run_or_404(ui, run_id)
    from avo import ops

    reason = values.get("reason", "").strip() or None
    call_id = values.get("call_id") or None
    try:
        if action in ("approve", "deny"):
            operation = ops.approve if action == "approve" else ops.deny
            await operation(
                ui.store, run_id, call_id, reason=reason, by="web", via="web", environ=ui.environ
            )
            if values.get("continue") and not await ops.pending_requests(ui.store, run_id):
                _resume(ui, run_id)
        elif action == "answer":
            text = values.get("text", "").strip()
            if values.get("form"):  # a tool's form: its fields make the JSON object it takes
                text = await _form_answer(ui, request, run_id, call_id)
            if not text:
                return _back(run_id, "the answer is empty; type what the tool should return")
            try:
                await ops.answer(
                    ui.store, run_id, text, call_id, by="web", via="web", environ=ui.environ
                )
            except AvoError as exc:
                kept = (call_id or "", text) if values.get("form") else None
                return _back(run_id, str(exc), kept, ui)
            if values.get("continue") and not await ops.pending_requests(ui.store, run_id):
                _resume(ui, run_id)
        elif action == "cancel":
            await ops.cancel(
                ui.store, run_id, reason=reason or "cancelled in avo ui", environ=ui.environ
            )
        elif action == "resume":
            _resume(ui, run_id)
        elif action == "steer":
            message = values.get("message", "").strip()
            ops.steer(run_id, message, source="web")
    except AvoError as exc:
        return _back(run_id, str(exc))
    return _back(run_id)


async def start_run(request: Request) -> Response:
    """Start a run for the form's task with the workspace's configuration."""
    ui = _ui(request)
    values = await _form(request)
    task = values.get("task", "").strip()
    if not task:
        raise HTTPException(400, "the task is empty; type what the agent should do")
    if len(task) > MAX_TASK:
        raise HTTPException(400, f"the task is {len(task)} characters; keep it under {MAX_TASK}")
    from avo.compose import compose
    from avo.compose.resolve import resolve_config

    try:
        resolved = resolve_config(ui.config, environ=ui.environ, cwd=ui.workspace)
        composition = compose(resolved=resolved, event_store=ui.store, workspace=ui.workspace)
    except AvoError as exc:
        raise HTTPException(400, f"cannot start a run here: {exc}") from exc
    run_id = new_id()
    _drive(ui, run_id, composition.runtime.run(task, run_id=run_id))
    for _ in range(200):  # the page opens once the run exists (or its start failed)
        if await ui.store.get_run(run_id) is not None or ui.tasks[run_id].done():
            break
        await asyncio.sleep(0.02)
    if await ui.store.get_run(run_id) is None:
        raise HTTPException(
            400, f"the run did not start: {ui.errors.get(run_id, 'no error recorded')}"
        )
    return RedirectResponse(f"/runs/{run_id}", 303)


__all__ = ["ACTIONS", "act", "start_run"]
