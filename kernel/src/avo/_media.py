"""Images and documents in a run: attachments, tool results, and what a request carries.

Internal to the runtime (loaded only by runs that carry media). Three jobs:

* :func:`attachments_content` checks a task's attachments against what the
  provider accepts (refusing before anything is recorded, or degrading to a
  placeholder when the runtime's ``media_fallback`` is ``"placeholder"``) and
  moves their bytes into the blob store;
* :func:`store_tool_output` does the same for a tool result made of content
  blocks (never refused: the tool, not the user, chose to return media);
* :func:`media_request` turns the transcript's blob references back into
  bytes for one request, and replaces what the model cannot take by a text
  placeholder (a textual document it cannot read as a document becomes text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue, ValidationError

from avo.blobs import BlobCache, blob_store_of, resolve_block, store_blocks
from avo.content_blocks import (
    TOOL_CONTENT_TYPE,
    attachment,
    document_text,
    is_media,
    is_text_media,
    placeholder,
    to_dicts,
)
from avo.exceptions import ConfigError, ContentNotSupportedError
from avo.models import ModelRequest, ToolResult, replaced

if TYPE_CHECKING:
    from avo._run_context import _RunContext
    from avo.runtime import AgentRuntime

FALLBACKS = ("refuse", "placeholder")

SEND, TEXT, DROP = "send", "text", "drop"


def capabilities_of(provider: Any) -> Any:
    """The provider's declared capabilities (``provider.capabilities``), or None."""
    caps = getattr(provider, "capabilities", None)
    return None if callable(caps) and not hasattr(caps, "vision") else caps


def verdict(caps: Any, block: Mapping[str, Any]) -> tuple[str, str]:
    """What happens to a media block for a model with ``caps``: (send | text | drop, why)."""
    kind = block.get("type")
    by_url = isinstance(block.get("url"), str)
    if caps is None:
        return DROP, "the provider declares no image or document support"
    if kind == "image":
        if not getattr(caps, "vision", False):
            return DROP, "the model does not accept images"
        if by_url and not getattr(caps, "image_urls", False):
            return DROP, "the model takes images only as bytes, not by URL; attach the file"
        return SEND, ""
    media_type = str(block.get("media_type") or "")
    accepted = tuple(getattr(caps, "documents", ()) or ())
    if media_type in accepted and not (by_url and not getattr(caps, "document_urls", False)):
        return SEND, ""
    if is_text_media(media_type) and not by_url:
        return TEXT, ""
    if media_type in accepted:
        return DROP, "the model takes documents only as bytes, not by URL; attach the file"
    return DROP, f"the model does not read {media_type or 'such'} documents"


def _who(rt: AgentRuntime) -> str:
    name = rt._provider_name or type(rt.provider).__name__
    model = rt._provider_model
    return f"{name}/{model}" if model and model != name else name


def _blocks(items: Iterable[Any], max_bytes: int | None) -> list[dict[str, JsonValue]]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, str | Path):  # a file to attach
            out.append(attachment(item, max_bytes=max_bytes))
        else:
            out.append(item)
    try:
        return to_dicts(out)
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise ConfigError(f"invalid attachment: {problem['msg']}") from None


async def attachments_content(
    rt: AgentRuntime, task: str, items: Sequence[Any]
) -> tuple[list[dict[str, JsonValue]], list[dict[str, JsonValue]]]:
    """The task's user-message content (text, then the attachments) and their summaries.

    Refuses (ContentNotSupportedError) an attachment the model cannot take,
    unless the runtime's ``media_fallback`` is ``"placeholder"``.
    """
    blocks = _blocks(items, getattr(rt, "max_attachment_bytes", None))
    caps = capabilities_of(rt.provider)
    for block in blocks:
        if not is_media(block):
            continue
        action, why = verdict(caps, block)
        if action == DROP and rt.media_fallback != "placeholder":
            what = (
                "image" if block.get("type") == "image" else f"{block.get('media_type')} document"
            )
            name = f" {block['name']}" if block.get("name") else ""
            raise ContentNotSupportedError(
                f"cannot attach the {what}{name}: {_who(rt)}: {why}; choose a model that "
                'accepts it (avo models), or set [media] fallback = "placeholder"',
                provider=rt._provider_name,
                model=rt._provider_model,
                kind=str(block.get("type")),
            )
    stored = await store_blocks(blocks, blob_store(rt))
    summaries: list[dict[str, JsonValue]] = [
        {
            key: block[key]
            for key in ("type", "media_type", "name", "size", "blob", "url")
            if key in block
        }
        for block in stored
        if is_media(block)
    ]
    content: list[dict[str, JsonValue]] = [{"type": "text", "text": task}, *stored]
    return content, summaries


def blob_store(rt: AgentRuntime) -> Any:
    """Where this runtime keeps media bytes: its own blob store, else its event store's."""
    given = rt._blob_store
    return given if given is not None else blob_store_of(rt.event_store)


async def store_tool_output(rt: AgentRuntime, ctx: _RunContext, result: ToolResult) -> ToolResult:
    """A content-block tool result with its media moved into the blob store.

    Blocks that do not validate make the result a failure naming the problem.
    """
    output: Any = result.output
    try:
        blocks = to_dicts(output.get("blocks") or [])
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        error = (
            f"Tool {result.tool_name!r} returned content blocks that are not valid: {where}: "
            f"{problem['msg']}; build them with avo.content_blocks.tool_content()"
        )
        return replaced(result, success=False, output=None, error=error)
    stored = await store_blocks(blocks, blob_store(rt))
    if any(is_media(block) for block in stored):
        ctx.media = True
    items: list[JsonValue] = list(stored)
    return replaced(result, output={"type": TOOL_CONTENT_TYPE, "blocks": items})


def _cache(rt: AgentRuntime) -> BlobCache:
    cache: BlobCache | None = rt._blob_cache
    if cache is None:
        cache = rt._blob_cache = BlobCache()
    return cache


async def _content(rt: AgentRuntime, caps: Any, content: list[Any]) -> list[Any] | None:
    """``content`` ready for the provider, or None when it holds no media."""
    if not any(is_media(block) for block in content):
        return None
    out: list[Any] = []
    store = blob_store(rt)
    for block in content:
        if not is_media(block):
            out.append(block)
            continue
        action, why = verdict(caps, block)
        if action == DROP:
            out.append(placeholder(block, why))
            continue
        resolved = await resolve_block(block, store, _cache(rt))
        if action == SEND:
            out.append(resolved)
            continue
        text = document_text(resolved)
        if text is None:
            out.append(placeholder(block, "its text could not be decoded as UTF-8"))
        else:
            label = resolved.get("name") or "document"
            out.append(
                {"type": "text", "text": f"[{label} ({resolved.get('media_type')})]\n{text}"}
            )
    return out


async def media_request(rt: AgentRuntime, request: ModelRequest) -> ModelRequest:
    """``request`` with media bytes read back from the blob store and unsupported media replaced."""
    caps = capabilities_of(rt.provider)
    messages: list[dict[str, JsonValue]] = []
    changed = False
    for message in request.messages:
        content = message.get("content")
        new = await _content(rt, caps, content) if type(content) is list else None
        if new is None:
            messages.append(message)
        else:
            messages.append({**message, "content": new})
            changed = True
    return replaced(request, messages=messages) if changed else request


__all__ = [
    "FALLBACKS",
    "attachments_content",
    "blob_store",
    "capabilities_of",
    "media_request",
    "store_tool_output",
    "verdict",
]
