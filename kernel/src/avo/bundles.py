"""Plugin bundles: tools, instructions, request shapers and hooks set up per run.

A bundle is one installable unit (a :class:`~avo.plugins.BundleSpec` in the
``avo.bundles`` entry-point group, or any object passed to
``AgentRuntime(bundles=[...])``) with two methods::

    class MyBundle:
        name = "mine"

        async def setup(self, run: BundleRun) -> BundleParts:
            ...  # start servers, read files: whatever this run needs
            return BundleParts(tools=[...], instructions=["..."], shapers=[...],
                               hooks=[(HookEvent.PRE_TOOL_USE, hook)])

        async def close(self) -> None:
            ...  # stop what setup started

For every run (and every resume) the runtime sets the bundles up in order
before the run's first event, adds their tools to the registry for that run,
their shapers to the request seam, their instructions as one system message
(through the seam: the transcript never holds them) and their hooks to the
hook registry. When the run ends — completed, failed, cancelled, or because an
exception escaped — it closes them in reverse order; a bundle whose ``setup``
raised is not closed, the ones before it are, and the run is not started
(:class:`~avo.exceptions.BundleError`). What each bundle contributed, and any
problem it reported (an MCP server that did not start, say), is recorded in
the run's ``run_created`` / ``run_resumed`` event.

An approval callback with a ``learn_tools(metadata_list)`` method (the
permission modes of avo-permissions have one) is told about the bundles'
tools, so their declared risk classes apply.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import JsonValue

from avo.exceptions import AvoError, BundleError, DuplicateToolError
from avo.shaping import BoundShaper, Shaping, bind_shaper

if TYPE_CHECKING:
    from avo.hooks import HookCallable, HookEvent
    from avo.runtime import AgentRuntime
    from avo.tools import Tool

logger = logging.getLogger("avo.runtime")

INSTRUCTIONS_SHAPER = "instructions"
"""The name the seam gives the shaper carrying the bundles' instructions."""
INSTRUCTIONS_ORDER = 100


@dataclass(frozen=True)
class BundleRun:
    """What a bundle learns about the run it is set up for."""

    run_id: str
    resumed: bool
    session_id: str | None
    event_store: Any
    environ: Mapping[str, str]
    workspace: Path
    task: str = ""
    """The run's task (as recorded: secrets masked when resumed)."""
    redactor: Any = None
    """The runtime's :class:`~avo.redaction.Redactor` (what it masks in events), or None."""
    provider: Any = None
    """The run's model provider (a bundle may answer requests with it, e.g. MCP sampling)."""
    approval_callback: Any = None
    """The run's approval seam (bool or :class:`~avo.approval.Approval`, maybe awaitable)."""


@dataclass
class BundleParts:
    """What a bundle contributes to one run.

    ``instructions`` are text blocks shown to the model as one system message
    after the system prompt; ``problems`` (name -> reason) are recorded, for
    parts that could not be set up without failing the run.
    """

    tools: Sequence[Tool] = ()
    instructions: Sequence[str] = ()
    shapers: Sequence[Any] = ()
    hooks: Sequence[tuple[HookEvent | str, HookCallable]] = ()
    problems: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class Bundle(Protocol):
    """A plugin bundle (see the module docstring)."""

    async def setup(self, run: BundleRun) -> BundleParts:
        """Set up this bundle for ``run``; return what it contributes."""
        ...

    async def close(self) -> None:
        """Release what :meth:`setup` took (called once per successful setup)."""
        ...


def bundle_name(bundle: Any) -> str:
    """A bundle's ``name`` attribute, else its class name."""
    name = getattr(bundle, "name", None)
    return name if isinstance(name, str) and name else type(bundle).__name__


def check_bundle(bundle: Any) -> Any:
    """Return ``bundle`` or raise BundleError saying which method it lacks."""
    for method in ("setup", "close"):
        if not callable(getattr(bundle, method, None)):
            raise BundleError(
                f"bundle {bundle_name(bundle)!r} has no {method}() method; a bundle needs "
                "async setup(run) -> BundleParts and async close()",
                plugin=bundle_name(bundle),
            )
    return bundle


class InstructionsShaper:
    """Shows the bundles' instructions as one system message after the leading ones."""

    name = INSTRUCTIONS_SHAPER
    order = INSTRUCTIONS_ORDER

    def __init__(self, blocks: Sequence[str]) -> None:
        self.message: dict[str, JsonValue] = {"role": "system", "content": "\n\n".join(blocks)}
        self._at = -1
        self._shaping: Shaping | None = None

    def avo_prepare_request(self, request: Any) -> Shaping:
        """Insert the instructions message after the request's leading system messages."""
        messages = request.messages
        at = 0
        while at < len(messages) and messages[at].get("role") == "system":
            at += 1
        if at != self._at or self._shaping is None:
            self._at = at
            self._shaping = Shaping.insert(at, self.message)
        return self._shaping


@dataclass
class OpenBundles:
    """The bundles set up for one run; :meth:`close` undoes everything, in reverse."""

    opened: list[Any] = field(default_factory=list)
    shapers: list[BoundShaper] = field(default_factory=list)
    record: list[JsonValue] = field(default_factory=list)
    _restore: list[tuple[str, Any]] = field(default_factory=list)
    _runtime: Any = None

    async def close(self) -> None:
        """Close every opened bundle in reverse order and restore the runtime's registries."""
        runtime = self._runtime
        for attribute, value in reversed(self._restore):
            setattr(runtime, attribute, value)
        self._restore.clear()
        while self.opened:
            bundle = self.opened.pop()
            try:
                await bundle.close()
            except Exception:
                logger.exception("bundle %r raised while closing", bundle_name(bundle))


async def open_bundles(
    rt: AgentRuntime,
    bundles: Sequence[Any],
    run: BundleRun,
) -> OpenBundles:
    """Set up ``bundles`` for ``run`` and add their parts to ``rt`` for the run's duration.

    On any failure the bundles already set up are closed (reverse order) and a
    BundleError naming the bundle is raised.
    """
    from avo.hooks import HookEvent, HookRegistry

    result = OpenBundles(_runtime=rt)
    tools: list[Any] = []
    hooks: list[tuple[Any, Any]] = []
    instructions: list[str] = []
    try:
        for bundle in bundles:
            name = bundle_name(bundle)
            try:
                parts = await bundle.setup(run)
            except AvoError as exc:
                raise BundleError(
                    f"bundle {name!r} could not be set up for run {run.run_id}: {exc}",
                    plugin=name,
                ) from exc
            except Exception as exc:
                raise BundleError(
                    f"bundle {name!r} could not be set up for run {run.run_id}: "
                    f"{type(exc).__name__}: {exc}",
                    plugin=name,
                ) from exc
            result.opened.append(bundle)
            if not isinstance(parts, BundleParts):
                raise BundleError(
                    f"bundle {name!r} returned {type(parts).__name__} from setup(); "
                    "return a BundleParts",
                    plugin=name,
                )
            tools.extend(parts.tools)
            hooks.extend(parts.hooks)
            instructions.extend(text for text in parts.instructions if text and text.strip())
            shaper_names: list[JsonValue] = []
            for shaper in parts.shapers:
                bound = bind_shaper(shaper)
                result.shapers.append(bound)
                shaper_names.append(bound.name)
            entry: dict[str, JsonValue] = {
                "name": name,
                "tools": list[JsonValue]([tool.metadata.name for tool in parts.tools]),
                "shapers": shaper_names,
                "instructions": len(parts.instructions),
                "hooks": len(parts.hooks),
            }
            if parts.problems:
                entry["problems"] = {str(k): str(v) for k, v in parts.problems.items()}
            result.record.append(entry)
        if tools:
            registry = _merged_tools(rt.tools, tools)
            result._restore.append(("tools", rt.tools))
            rt.tools = registry
            learn = getattr(rt.approval_callback, "learn_tools", None)
            if callable(learn):  # a permission mode learns the bundles' tools and risks
                learn([tool.metadata for tool in tools])
        if hooks:
            merged = HookRegistry()
            if rt.hooks is not None:
                for event in HookEvent:
                    for hook in rt.hooks.hooks_for(event):
                        merged.register(event, hook)
            for event, hook in hooks:
                merged.register(HookEvent(event), hook)
            result._restore.append(("hooks", rt.hooks))
            rt.hooks = merged
        if instructions:
            result.shapers.append(
                bind_shaper(InstructionsShaper(instructions), order=INSTRUCTIONS_ORDER)
            )
    except BaseException:
        await result.close()
        raise
    return result


def _merged_tools(base: Any, extra: Sequence[Any]) -> Any:
    from avo.tools import ToolRegistry

    try:  # the base registry's own kind: an engine's workflow keeps its calls remote
        if callable(getattr(base, "with_tools", None)):
            return base.with_tools(extra)
        return ToolRegistry([base.get(name) for name in base.names()]).with_tools(extra)
    except DuplicateToolError as exc:
        raise BundleError(
            f"a bundle contributed tool {exc.tool_name!r}, but the run already has a "
            "tool of that name; rename one of them (MCP tools: use the server-name prefix)",
        ) from exc


__all__ = [
    "INSTRUCTIONS_SHAPER",
    "Bundle",
    "BundleParts",
    "BundleRun",
    "InstructionsShaper",
    "OpenBundles",
    "bundle_name",
    "check_bundle",
    "open_bundles",
]
