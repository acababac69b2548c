"""The ``command`` hook: run an executable with the event as JSON on stdin.

Its exit status and stdout decide (see :mod:`avo_hooks.payload` for the JSON):

- exit 0: allow, unless stdout holds a reply saying otherwise (empty = allow);
- exit 2: deny; the reason is the reply's ``reason``, else stderr, else a
  default naming the hook;
- any other status, death by a signal, a timeout (the whole process group is
  killed), an executable that cannot be started, or stdout that is not a
  reply: the hook **failed**. It raises :class:`~avo.exceptions.HookError`,
  so at ``pre_tool_use`` the kernel denies the call with the hook's name in
  the reason (fail closed) and records a HOOK_FAILED event.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
from collections.abc import Mapping
from typing import Any

from avo.exceptions import ConfigError, HookError
from avo.hooks import HookContext, HookDecision
from avo.models import ToolMetadata
from avo.redaction import Redactor, is_secret_env_name
from avo_hooks.payload import REASON_LIMIT, applies, encode_event, event_payload, parse_reply
from avo_hooks.settings import CommandHookSettings

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand(value: str, environ: Mapping[str, str], *, where: str) -> str:
    """``${VAR}`` replaced from ``environ``; a clear error for an unset variable."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise ConfigError(f"{where} uses ${{{name}}}, which is not set in the environment")
        return environ[name]

    return _VARIABLE.sub(replace, value)


def _tail(data: bytes, redactor: Redactor) -> str:
    text = " ".join(data.decode("utf-8", "replace").split())
    if len(text) > REASON_LIMIT:
        text = "…" + text[-(REASON_LIMIT - 1) :]
    return redactor.text(text)


class CommandHook:
    """One configured command hook; call it with a HookContext."""

    def __init__(
        self,
        settings: CommandHookSettings,
        *,
        environ: Mapping[str, str] | None = None,
        tools: Mapping[str, ToolMetadata] | None = None,
    ) -> None:
        env = dict(os.environ if environ is None else environ)
        self.settings = settings
        self.argv = (
            shlex.split(settings.command)
            if isinstance(settings.command, str)
            else list(settings.command)
        )
        self.label = settings.name or f"command:{os.path.basename(self.argv[0])}"
        self.hook_label = self.label  # how the kernel names this hook in faults
        self.redactor = Redactor(environ=env)
        keep = set(settings.pass_env)
        child = {k: v for k, v in env.items() if k in keep or not is_secret_env_name(k)}
        for key, value in settings.env.items():
            expanded = expand(value, env, where=f"hook {self.label!r}: env.{key}")
            child[key] = expanded
            if is_secret_env_name(key):
                self.redactor.add(expanded)
        self.environ = child
        self.tools = dict(tools or {})

    async def __call__(self, context: HookContext) -> HookDecision | None:
        if not applies(context, self.settings.tools):
            return None
        payload = event_payload(context, hook=self.label, redactor=self.redactor, tools=self.tools)
        environ = {
            **self.environ,
            "AVO_HOOK_EVENT": context.event.value,
            "AVO_RUN_ID": context.run_id,
        }
        out, err, status = await self._run(encode_event(payload), environ)
        if status == 0:
            return parse_reply(
                out.decode("utf-8", "replace"), hook=self.label, redactor=self.redactor
            )
        if status == 2:
            default = _tail(err, self.redactor) or f"denied by hook {self.label!r}"
            text = out.decode("utf-8", "replace")
            if text.strip():
                return parse_reply(
                    text, hook=self.label, redactor=self.redactor, default_deny_reason=default
                )
            return HookDecision.block(default)
        detail = _tail(err, self.redactor)
        if status < 0:
            name = signal.Signals(-status).name if -status in signal.valid_signals() else -status
            problem = f"was killed by signal {name}"
        else:
            problem = f"exited with status {status}"
        raise HookError(
            f"command hook {problem}" + (f": {detail}" if detail else ""),
            hook=self.label,
        )

    async def _run(self, data: bytes, environ: dict[str, str]) -> tuple[bytes, bytes, int]:
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=environ,
                cwd=self.settings.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise HookError(
                f"command hook could not start {self.argv[0]!r}: {exc.strerror or exc}",
                hook=self.label,
            ) from exc
        try:
            out, err = await asyncio.wait_for(
                process.communicate(data), timeout=self.settings.timeout
            )
        except TimeoutError:
            await _kill(process)
            raise HookError(
                f"command hook timed out after {self.settings.timeout:g} s "
                "(its process group was killed)",
                hook=self.label,
            ) from None
        except BaseException:
            await _kill(process)
            raise
        assert process.returncode is not None
        return out, err, process.returncode


async def _kill(process: Any) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    await process.wait()


__all__ = ["CommandHook", "expand"]
