"""Long-term memory in a run: recall through the request seam, write-back after it.

:class:`MemoryBundle` is the bundle (see :mod:`avo.bundles`) that puts a
memory store to work in every run of a runtime::

    runtime = AgentRuntime(provider=..., memory=MemoryBundle(store, write=("final_answer",)))

- **Recall.** Before the run's first model call its :class:`MemoryRecallShaper`
  asks the store for the memories relevant to the task and shows them to the
  model as one ``Relevant memories:`` system message, placed after the leading
  system messages (so after the system prompt and the bundles' instructions).
  The message is part of each request, never of the transcript; the memories
  recalled are kept in the shaper's checkpointed state, so a resumed run sees
  exactly what it saw before (no second recall), and ``request_shaped`` events
  record them. A store that fails to recall does not fail the run: the run goes
  on without memories and the failure is recorded in the event's note.
- **Write-back** (``write``): ``"final_answer"`` stores the task and the final
  answer of every run that completes (after the run is over: the STOP hook);
  ``"remember"`` gives the model a ``remember`` tool to store a fact it learned
  (immediately, as a tool call recorded like any other). Everything written
  passes the runtime's redactor first: a secret the runtime would mask in its
  events is masked in memory too.

``AgentRuntime(memory=store)`` wraps a plain store (or a
:class:`~avo.memory.LetheMemoryAdapter`) in a recall-only bundle, as before;
``[memory]`` in ``avo.toml`` builds one from an ``avo.memory`` plugin.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, JsonValue

from avo.bundles import BundleParts, BundleRun
from avo.exceptions import ConfigError
from avo.hooks import HookContext, HookDecision, HookEvent
from avo.memory import LetheMemoryAdapter, format_memories
from avo.redaction import Redactor
from avo.risk import ToolRisk
from avo.shaping import Shaping, ShapingContext
from avo.state import RunState
from avo.tools import FunctionTool

logger = logging.getLogger("avo.memory")

FINAL_ANSWER = "final_answer"
REMEMBER = "remember"
WRITE_MODES: tuple[str, ...] = (FINAL_ANSWER, REMEMBER)
"""What a run may write to memory: its final answer, and ``remember`` tool calls."""
RECALL_SHAPER = "memory"
RECALL_ORDER = 150
"""After the bundles' instructions (100): memories follow the standing instructions."""


def _leading_system(messages: Sequence[Mapping[str, Any]]) -> int:
    at = 0
    while at < len(messages) and messages[at].get("role") == "system":
        at += 1
    return at


def _last_user_text(transcript: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(transcript):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


class MemoryRecallShaper:
    """Shows the memories recalled for the run's task to every model call of the run."""

    name = RECALL_SHAPER
    order = RECALL_ORDER

    def __init__(self, adapter: Any, *, task: str = "", redactor: Redactor | None = None) -> None:
        self.adapter = adapter
        self.task = task
        self.redactor = redactor
        self._key: tuple[int, tuple[str, ...]] | None = None
        self._shaping: Shaping | None = None

    async def _recall(self, context: ShapingContext) -> dict[str, JsonValue]:
        query = self.task or _last_user_text(context.transcript)
        state: dict[str, JsonValue] = {"query_chars": len(query)}
        try:
            texts = await _recall_texts(self.adapter, query) if query.strip() else []
        except Exception as exc:  # memory is an aid: the run goes on without it
            logger.warning("run %s: memory recall failed: %s: %s", context.run_id, type(exc), exc)
            texts = []
            state["error"] = f"{type(exc).__name__}: {exc}"
        if self.redactor is not None:  # a store filled by other means may hold secrets
            texts = [self.redactor.text(text) for text in texts]
        state["memories"] = list[JsonValue](texts)
        return state

    async def avo_prepare_request(self, request: Any, context: ShapingContext) -> Shaping | None:
        """Insert the ``Relevant memories:`` message after the leading system messages."""
        state: Mapping[str, Any] = context.state
        if "memories" not in state:  # first call of the run: recall once, keep it durable
            fresh = await self._recall(context)
            context.set_state(fresh)
            state = fresh
        recalled = state.get("memories")
        texts = tuple(str(text) for text in recalled) if isinstance(recalled, list) else ()
        error = state.get("error")
        if not texts and not error:
            return None
        at = _leading_system(request.messages)
        key = (at, texts)
        if self._shaping is None or key != self._key:
            note: dict[str, JsonValue] = {"memories": len(texts)}
            if error:
                note["memory_error"] = str(error)
            content = format_memories(texts)
            splices = (
                Shaping.insert(at, {"role": "system", "content": content}).splices
                if content
                else ()
            )
            self._shaping = Shaping(splices=splices, note=note)
            self._key = key
        return self._shaping


class _RememberArguments(BaseModel):
    content: str = Field(
        min_length=1,
        description="The fact to remember, in one or two self-contained sentences.",
    )
    tags: list[str] = Field(default_factory=list, description="Optional short labels.")


class MemoryBundle:
    """Recall and write-back for every run of a runtime (see the module docstring).

    :param store: a memory store (``recall`` / ``remember``) or a
        :class:`~avo.memory.LetheMemoryAdapter` around one.
    :param recall_k: how many memories to recall per run (0: no recall).
    :param write: which of :data:`WRITE_MODES` to store (default: nothing).
    :param max_chars: the longest memory shown to the model (longer ones are cut).
    :param min_answer_chars: final answers shorter than this are not stored.
    """

    name = "memory"

    def __init__(
        self,
        store: Any,
        *,
        recall_k: int = 5,
        write: Iterable[str] = (),
        max_chars: int = 2000,
        min_answer_chars: int = 1,
    ) -> None:
        if recall_k < 0:
            raise ConfigError(
                f"memory recall must be 0 or more memories, got {recall_k}", key="recall"
            )
        modes = tuple(dict.fromkeys(write))
        unknown = [mode for mode in modes if mode not in WRITE_MODES]
        if unknown:
            raise ConfigError(
                f"unknown memory write mode {unknown[0]!r}; choose from "
                f"{', '.join(WRITE_MODES)} (or an empty list to write nothing)",
                key="write",
            )
        if callable(getattr(store, "recall_text", None)):  # a LetheMemoryAdapter, or shaped so
            self.adapter: Any = store
        else:
            self.adapter = LetheMemoryAdapter(store, recall_k=recall_k or 1, max_chars=max_chars)
        self.store: Any = getattr(self.adapter, "store", self.adapter)
        self.recall_k = recall_k
        self.write = modes
        self.min_answer_chars = max(1, min_answer_chars)

    async def setup(self, run: BundleRun) -> BundleParts:
        """This run's recall shaper, ``remember`` tool and write-back hook."""
        redactor: Redactor = run.redactor or Redactor(environ=run.environ)
        session = run.session_id or run.run_id
        shapers = []
        if self.recall_k:
            shapers.append(MemoryRecallShaper(self.adapter, task=run.task, redactor=redactor))
        tools = []
        if REMEMBER in self.write:
            tools.append(self._remember_tool(redactor, session))
        hooks: list[tuple[HookEvent | str, Any]] = []
        if FINAL_ANSWER in self.write:
            hooks.append((HookEvent.STOP, self._final_answer_hook(run, redactor, session)))
        return BundleParts(tools=tools, shapers=shapers, hooks=hooks)

    async def close(self) -> None:
        """Nothing per run: the store outlives its runs (see :meth:`aclose`)."""

    async def aclose(self) -> None:
        """Close the store (``aclose()`` or ``close()``, awaited when it is a coroutine)."""
        for method in ("aclose", "close"):
            close = getattr(self.store, method, None)
            if callable(close):
                result = close()
                if inspect.isawaitable(result):
                    await result
                return

    def _remember_tool(self, redactor: Redactor, session: str) -> Any:
        store = self.store

        async def remember(arguments: _RememberArguments) -> dict[str, JsonValue]:
            content = redactor.text(arguments.content.strip())
            record = await _remember(store, content, session, [REMEMBER, *arguments.tags])
            memory_id = getattr(record, "memory_id", None)
            return {"remembered": content, "memory_id": memory_id}

        return FunctionTool(
            name=REMEMBER,
            description=(
                "Store a fact in long-term memory so later runs can recall it. Use it for "
                "durable facts about the user, the project or decisions made; never for secrets."
            ),
            arguments_model=_RememberArguments,
            function=remember,
            risk=ToolRisk.MODIFY,
            argument_kinds={"content": "text"},
        )

    def _final_answer_hook(self, run: BundleRun, redactor: Redactor, session: str) -> Any:
        store = self.store
        minimum = self.min_answer_chars

        async def write_final_answer(context: HookContext) -> HookDecision:
            head = context.run
            if head is None or head.state is not RunState.COMPLETED:
                return HookDecision.allow()
            answer = (head.output or "").strip()
            if len(answer) < minimum:
                return HookDecision.allow()
            task = (run.task or head.task or "").strip()
            content = redactor.text(f"Q: {task}\nA: {answer}" if task else answer)
            await _remember(store, content, session, [FINAL_ANSWER])
            return HookDecision.allow(f"remembered the final answer of run {head.run_id}")

        write_final_answer.__qualname__ = "memory.write_final_answer"
        return write_final_answer


async def _recall_texts(adapter: Any, query: str) -> list[str]:
    result = adapter.recall_text(query)
    if inspect.isawaitable(result):
        result = await result
    return [str(text) for text in result or () if str(text).strip()]


async def _remember(store: Any, content: str, session: str, tags: list[str]) -> Any:
    record = store.remember(content, session_id=session, tags=tags)
    if inspect.isawaitable(record):
        record = await record
    return record


def memory_bundle(memory: Any) -> Any:
    """``AgentRuntime(memory=...)``: a bundle as is, a store or adapter wrapped recall-only."""
    if callable(getattr(memory, "setup", None)) and callable(getattr(memory, "close", None)):
        return memory
    return MemoryBundle(memory, recall_k=int(getattr(memory, "recall_k", 5) or 5))


__all__ = [
    "FINAL_ANSWER",
    "RECALL_ORDER",
    "RECALL_SHAPER",
    "REMEMBER",
    "WRITE_MODES",
    "MemoryBundle",
    "MemoryRecallShaper",
    "memory_bundle",
]
