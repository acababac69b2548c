"""What the model sees of an MCP tool result.

An MCP ``CallToolResult`` carries a list of content items (text, image, audio,
embedded resources, resource links) and, since the 2025-06-18 revision, an
optional ``structuredContent`` object that servers usually send *as well as* a
text rendering of the same data. :func:`convert_result` turns it into a
:class:`ToolOutput`: typed parts, in order, plus the structured value.
:meth:`ToolOutput.for_model` renders those parts once:

- text items are joined with newlines, once;
- ``structuredContent`` is shown (as JSON) only when there is no text;
- an embedded resource whose content is text (or a textual blob) is shown as
  that text under a one-line header naming its URI;
- images, audio and binary resources become a one-line placeholder naming the
  media type and size in that text; :meth:`ToolOutput.for_runtime` (what MCP
  tools return) instead hands PNG/JPEG/GIF/WebP images and PDF resources to
  the runtime as content blocks, so a vision model sees them and any other
  model reads the kernel's placeholder line;
- the whole rendering is capped at ``max_chars`` with an explicit note saying
  how much was cut.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

DEFAULT_MAX_OUTPUT_CHARS = 50_000
"""The default cap on the text one MCP tool result puts in front of the model."""

_TEXTUAL_MIME_PREFIXES = ("text/",)
_TEXTUAL_MIME_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/javascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/sql",
        "application/x-sh",
    }
)


@dataclass(frozen=True)
class TextPart:
    """Plain text from the server."""

    text: str


@dataclass(frozen=True)
class MediaPart:
    """An image or audio clip (base64 ``data``), or a binary embedded resource."""

    kind: Literal["image", "audio", "binary"]
    mime_type: str
    data: str
    uri: str | None = None

    @property
    def size_bytes(self) -> int:
        """The decoded size, computed from the base64 length."""
        padding = self.data[-2:].count("=") if self.data else 0
        return max(0, len(self.data) * 3 // 4 - padding)

    def placeholder(self) -> str:
        """A one-line description standing in for the media in a text-only message."""
        what = f"{self.kind} resource {self.uri}" if self.uri else self.kind
        return (
            f"[{what}: {self.mime_type}, {_size(self.size_bytes)}; not shown to the model "
            "(tool results reach it as text)]"
        )


@dataclass(frozen=True)
class ResourceTextPart:
    """An embedded resource whose content is text."""

    uri: str
    text: str
    mime_type: str | None = None


@dataclass(frozen=True)
class LinkPart:
    """A ``resource_link``: a URI the model may read with another call."""

    uri: str
    name: str | None = None
    description: str | None = None


Part = TextPart | MediaPart | ResourceTextPart | LinkPart


@dataclass(frozen=True)
class ToolOutput:
    """One converted ``CallToolResult``."""

    parts: tuple[Part, ...] = ()
    structured: Any = None
    is_error: bool = False
    max_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    notes: tuple[str, ...] = field(default=())

    @property
    def media(self) -> tuple[MediaPart, ...]:
        """The parts a text-only message cannot carry."""
        return tuple(part for part in self.parts if isinstance(part, MediaPart))

    def for_model(self) -> str:
        """The text the model sees: every part once, capped, with any truncation noted."""
        return cap(self.render(), self.max_chars)

    @property
    def sendable(self) -> tuple[MediaPart, ...]:
        """Media a vision model can be shown: PNG/JPEG/GIF/WebP images and PDF resources."""
        return tuple(part for part in self.media if _sendable(part))

    def for_runtime(self) -> Any:
        """What the tool hands the runtime: :meth:`for_model`'s text when there is no
        image, else content blocks (:func:`avo.content_blocks.tool_content`): the text,
        then the images and PDFs, which reach vision models as images and documents
        (a model without vision gets the kernel's one-line placeholder instead)."""
        sendable = self.sendable
        if not sendable:
            return self.for_model()
        from avo.content_blocks import DocumentBlock, ImageBlock, tool_content

        text = cap(self.render(skip=sendable, empty=""), self.max_chars)
        blocks: list[Any] = [text] if text else []
        for part in sendable:
            name = part.uri.rsplit("/", 1)[-1] if part.uri else None
            kind = ImageBlock if part.kind == "image" else DocumentBlock
            blocks.append(
                kind(media_type=part.mime_type, data=part.data, size=part.size_bytes, name=name)
            )
        return tool_content(*blocks)

    def render(
        self, *, skip: tuple[MediaPart, ...] = (), empty: str = "(the tool returned no content)"
    ) -> str:
        """Every part rendered once, uncapped (``skip``: media sent as content blocks)."""
        has_text = any(isinstance(part, TextPart | ResourceTextPart) for part in self.parts)
        pieces: list[str] = []
        for part in self.parts:
            if any(part is sent for sent in skip):
                continue
            if isinstance(part, TextPart):
                pieces.append(part.text)
            elif isinstance(part, ResourceTextPart):
                pieces.append(f"[resource {part.uri}]\n{part.text}")
            elif isinstance(part, LinkPart):
                label = f" ({part.name})" if part.name and part.name != part.uri else ""
                pieces.append(f"[resource link: {part.uri}{label}]")
            else:
                pieces.append(part.placeholder())
        if not has_text and self.structured is not None:
            pieces.append(json.dumps(self.structured, ensure_ascii=False, sort_keys=True))
        pieces.extend(self.notes)
        if not pieces:
            return empty
        return "\n".join(pieces)


_SENDABLE_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _sendable(part: MediaPart) -> bool:
    if part.kind == "image":
        return part.mime_type.split(";", 1)[0].strip().lower() in _SENDABLE_IMAGES
    return part.kind == "binary" and part.mime_type == "application/pdf" and bool(part.data)


def cap(text: str, max_chars: int) -> str:
    """``text`` itself, or its head and tail around a note saying what was cut."""
    if len(text) <= max_chars:
        return text
    head = max_chars * 3 // 4
    tail = max_chars - head
    cut = len(text) - head - tail
    note = (
        f"\n[avo truncated this MCP tool result: {cut} of {len(text)} characters cut here, "
        f"the first {head} and the last {tail} are shown; ask the tool for a smaller part "
        "if you need the rest]\n"
    )
    return text[:head] + note + (text[-tail:] if tail else "")


def convert_result(
    result: Mapping[str, Any], *, max_chars: int = DEFAULT_MAX_OUTPUT_CHARS
) -> ToolOutput:
    """Typed parts of an MCP ``CallToolResult`` (unknown item types are noted, not dropped)."""
    parts: list[Part] = []
    notes: list[str] = []
    content = result.get("content")
    for item in content if isinstance(content, list) else []:
        part = convert_item(item)
        if part is None:
            kind = item.get("type") if isinstance(item, dict) else type(item).__name__
            notes.append(f"[unsupported MCP content item of type {kind!r} omitted]")
        else:
            parts.append(part)
    return ToolOutput(
        parts=tuple(parts),
        structured=result.get("structuredContent"),
        is_error=bool(result.get("isError")),
        max_chars=max_chars,
        notes=tuple(notes),
    )


def convert_item(item: Any) -> Part | None:
    """One content item (also a prompt message's content) as a part; None when unknown."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind == "text" and isinstance(item.get("text"), str):
        return TextPart(item["text"])
    if kind in ("image", "audio") and isinstance(item.get("data"), str):
        return MediaPart(
            kind, str(item.get("mimeType") or "application/octet-stream"), item["data"]
        )
    if kind == "resource" and isinstance(item.get("resource"), dict):
        return resource_part(item["resource"])
    if kind == "resource_link" and isinstance(item.get("uri"), str):
        name = item.get("name")
        description = item.get("description")
        return LinkPart(
            item["uri"],
            name if isinstance(name, str) else None,
            description if isinstance(description, str) else None,
        )
    return None


def resource_part(resource: Mapping[str, Any]) -> Part:
    """A ``resources/read`` content (or embedded resource) as text when textual, else media."""
    uri = str(resource.get("uri") or "")
    mime = resource.get("mimeType")
    mime_type = mime if isinstance(mime, str) and mime else None
    text = resource.get("text")
    if isinstance(text, str):
        return ResourceTextPart(uri, text, mime_type)
    blob = resource.get("blob")
    blob = blob if isinstance(blob, str) else ""
    if is_textual(mime_type):
        try:
            return ResourceTextPart(uri, base64.b64decode(blob).decode("utf-8"), mime_type)
        except (binascii.Error, ValueError):
            pass  # not valid base64 or not UTF-8: described as binary below
    return MediaPart("binary", mime_type or "application/octet-stream", blob, uri=uri)


def is_textual(mime_type: str | None) -> bool:
    """True for media types whose bytes are text (text/*, JSON, XML, YAML, ...)."""
    if not mime_type:
        return False
    base = mime_type.split(";", 1)[0].strip().lower()
    return (
        base.startswith(_TEXTUAL_MIME_PREFIXES)
        or base in _TEXTUAL_MIME_TYPES
        or base.endswith(("+json", "+xml"))
    )


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "LinkPart",
    "MediaPart",
    "Part",
    "ResourceTextPart",
    "TextPart",
    "ToolOutput",
    "cap",
    "convert_item",
    "convert_result",
    "is_textual",
    "resource_part",
]
