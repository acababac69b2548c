"""Typed content blocks: text, images and documents in messages and tool results.

A transcript message's ``content`` is either a string (the common case) or a
list of blocks, each a dict with a ``type``:

* ``{"type": "text", "text": "..."}``
* ``{"type": "image", "media_type": "image/png", ...source}``
* ``{"type": "document", "media_type": "application/pdf", "name": "a.pdf", ...source}``

where the source is exactly one of ``data`` (base64 bytes), ``url`` (the
vendor fetches it) or ``blob`` (``sha256:<hex>``, bytes kept once in the
run's blob store, see :mod:`avo.blobs`). ``size`` is the byte count when
known. :class:`TextBlock`, :class:`ImageBlock` and :class:`DocumentBlock`
are the typed models of those dicts (``Block`` is their union); providers
serialize them for their vendor (avo-providers has one serializer per vendor
family).

A tool hands the model blocks by returning :func:`tool_content` (the JSON
value ``{"type": "content_blocks", "blocks": [...]}``); its ``role: tool``
message then carries the blocks as its content.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, TypeAdapter, model_validator

from avo.exceptions import ConfigError
from avo.models import AvoModel

IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""Image types every vision vendor accepts."""

TOOL_CONTENT_TYPE = "content_blocks"
"""The ``type`` of a tool output that hands the model content blocks."""

DEFAULT_MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024
"""The largest file :func:`attachment` reads (vendors cap a request near this)."""


class TextBlock(AvoModel):
    """A piece of text."""

    type: Literal["text"] = "text"
    text: str = Field(min_length=1)


class _Media(AvoModel):
    media_type: str | None = None
    data: str | None = None
    """The bytes, base64-encoded."""
    url: str | None = None
    """Where the vendor fetches the bytes (http/https)."""
    blob: str | None = None
    """``sha256:<hex>``: the bytes are in the run's blob store."""
    size: int | None = Field(default=None, ge=0)
    """Byte count, when known."""
    name: str | None = None
    """A file name to show the model (documents) or in placeholders."""

    @model_validator(mode="after")
    def _one_source(self) -> _Media:
        given = [key for key in ("data", "url", "blob") if getattr(self, key) is not None]
        if len(given) != 1:
            raise ValueError(
                f"a {self.__class__.__name__} needs exactly one of data, url or blob; got "
                f"{', '.join(given) or 'none'}"
            )
        if self.url is None and not self.media_type:
            raise ValueError(f"a {self.__class__.__name__} with data or blob needs a media_type")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url must be http(s), got {self.url[:40]!r}")
        return self

    def to_dict(self) -> dict[str, JsonValue]:
        """The block as a transcript dict (unset fields left out)."""
        dumped: dict[str, JsonValue] = self.model_dump(mode="json", exclude_none=True)
        return dumped

    def raw(self) -> bytes:
        """The decoded bytes of a ``data`` block (ValueError for url/blob blocks)."""
        if self.data is None:
            raise ValueError("only a block holding data has bytes here; resolve blobs first")
        return base64.b64decode(self.data)


class ImageBlock(_Media):
    """An image (PNG, JPEG, GIF or WebP)."""

    type: Literal["image"] = "image"

    @classmethod
    def from_path(
        cls, path: str | Path, *, media_type: str | None = None, max_bytes: int | None = None
    ) -> ImageBlock:
        """An image block holding a file's bytes (media type sniffed when not given)."""
        block = attachment(path, media_type=media_type, max_bytes=max_bytes)
        if not isinstance(block, ImageBlock):
            raise ConfigError(
                f"{path}: {block.media_type} is not an image; attach it as a document instead"
            )
        return block

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, *, name: str | None = None) -> ImageBlock:
        """An image block holding ``data``."""
        return cls(
            media_type=media_type,
            data=base64.b64encode(data).decode("ascii"),
            size=len(data),
            name=name,
        )

    def as_anthropic_source(self) -> dict[str, Any]:
        """The Anthropic ``source`` object of this image (base64 or url)."""
        if self.url is not None:
            return {"type": "url", "url": self.url}
        return {"type": "base64", "media_type": self.media_type, "data": self.data}


class DocumentBlock(_Media):
    """A document: a PDF, or text (``text/plain``, ``text/markdown``, CSV...)."""

    type: Literal["document"] = "document"

    @classmethod
    def from_path(
        cls, path: str | Path, *, media_type: str | None = None, max_bytes: int | None = None
    ) -> DocumentBlock:
        """A document block holding a file's bytes."""
        block = attachment(path, media_type=media_type, max_bytes=max_bytes)
        if not isinstance(block, DocumentBlock):
            raise ConfigError(f"{path}: {block.media_type} is an image; attach it as an image")
        return block

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, *, name: str | None = None) -> DocumentBlock:
        """A document block holding ``data``."""
        return cls(
            media_type=media_type,
            data=base64.b64encode(data).decode("ascii"),
            size=len(data),
            name=name,
        )

    @property
    def is_text(self) -> bool:
        """True for a textual document (its bytes are UTF-8 text)."""
        return is_text_media(self.media_type)


Block = Annotated[TextBlock | ImageBlock | DocumentBlock, Field(discriminator="type")]
"""One content block."""

_BLOCKS: TypeAdapter[list[Block]] = TypeAdapter(list[Block])


class Message(AvoModel):
    """A message whose content is a list of blocks."""

    role: Literal["system", "user", "assistant", "tool"]
    content: list[Block]

    def to_dict(self) -> dict[str, JsonValue]:
        """The message as a transcript dict."""
        return {"role": self.role, "content": [block_dict(block) for block in self.content]}


def block_dict(block: TextBlock | ImageBlock | DocumentBlock) -> dict[str, JsonValue]:
    """A typed block as a transcript dict."""
    dumped: dict[str, JsonValue] = block.model_dump(mode="json", exclude_none=True)
    return dumped


def parse_blocks(value: Any) -> list[TextBlock | ImageBlock | DocumentBlock]:
    """Validate a list of block dicts (or typed blocks) into typed blocks."""
    return list(_BLOCKS.validate_python(value))


def to_dicts(blocks: Iterable[Any]) -> list[dict[str, JsonValue]]:
    """Blocks (typed, dicts, or plain strings as text) as validated transcript dicts."""
    items: list[Any] = []
    for block in blocks:
        if isinstance(block, str):
            if block:
                items.append({"type": "text", "text": block})
        elif isinstance(block, AvoModel):
            items.append(block_dict(block))  # type: ignore[arg-type]
        else:
            items.append(block)
    return [block_dict(block) for block in parse_blocks(items)]


def tool_content(*blocks: Any) -> dict[str, JsonValue]:
    """What a tool returns to hand the model content blocks (text, images, documents).

    ``blocks`` are typed blocks, block dicts or strings (text). The runtime
    stores the media in the run's blob store and the tool's message carries
    the blocks; providers without vision see a placeholder line instead.
    """
    items: list[JsonValue] = list(to_dicts(blocks))
    return {"type": TOOL_CONTENT_TYPE, "blocks": items}


def is_tool_content(value: Any) -> bool:
    """True for a tool output made by :func:`tool_content`."""
    return (
        type(value) is dict
        and value.get("type") == TOOL_CONTENT_TYPE
        and isinstance(value.get("blocks"), list)
    )


def is_media(block: Any) -> bool:
    """True for an image or document block dict."""
    return type(block) is dict and block.get("type") in ("image", "document")


def has_media(content: Any) -> bool:
    """True when a message content (or tool output) holds image or document blocks."""
    if is_tool_content(content):
        content = content["blocks"]
    return type(content) is list and any(is_media(block) for block in content)


def messages_have_media(messages: Iterable[Mapping[str, Any]]) -> bool:
    """True when any message's content holds an image or a document."""
    return any(has_media(message.get("content")) for message in messages)


def size_text(count: int | None) -> str:
    """A byte count for people: ``812 bytes``, ``34.1 KiB``, ``2.0 MiB``."""
    if count is None:
        return "size unknown"
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def placeholder(block: Mapping[str, Any], reason: str) -> dict[str, JsonValue]:
    """A text block standing in for a media block the model cannot be shown."""
    kind = str(block.get("type"))
    name = block.get("name")
    what = f"{kind} {name}" if name else kind
    media = block.get("media_type") or "unknown type"
    size = size_text(block.get("size") if isinstance(block.get("size"), int) else None)
    where = f", {block['url']}" if block.get("url") else ""
    return {"type": "text", "text": f"[{what}: {media}, {size}{where}; not shown: {reason}]"}


def text_of(content: Any, *, reason: str = "text only here") -> str:
    """Message content (a string or blocks) as text; media become placeholder lines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if is_tool_content(content):
        content = content["blocks"]
    if not isinstance(content, list):
        return str(content)
    pieces: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            pieces.append(str(block.get("text", "")))
        elif is_media(block):
            pieces.append(str(placeholder(block, reason)["text"]))
    return "\n".join(piece for piece in pieces if piece)


def is_text_media(media_type: str | None) -> bool:
    """True for media types whose bytes are text (``text/*``, JSON, XML, YAML, CSV...)."""
    if not media_type:
        return False
    base = media_type.split(";", 1)[0].strip().lower()
    return (
        base.startswith("text/")
        or base in ("application/json", "application/xml", "application/x-yaml", "application/yaml")
        or base.endswith(("+json", "+xml"))
    )


def document_text(block: Mapping[str, Any]) -> str | None:
    """The text of a textual document block holding ``data`` (None otherwise)."""
    if not is_text_media(block.get("media_type")) or not isinstance(block.get("data"), str):
        return None
    try:
        return base64.b64decode(block["data"]).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
)


def sniff_media_type(data: bytes, name: str | None = None) -> str | None:
    """The media type of ``data``: magic bytes first, then the name's suffix, then text."""
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if name:
        guessed, _ = mimetypes.guess_type(name)
        if guessed:
            return guessed
    try:
        data[:65536].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "text/plain"


def attachment(
    path: str | Path, *, media_type: str | None = None, max_bytes: int | None = None
) -> ImageBlock | DocumentBlock:
    """A block for a file: an image (PNG/JPEG/GIF/WebP), a PDF or a text document.

    Raises ConfigError (one line naming the file and the fix) for a missing,
    too large or unrecognised file.
    """
    file = Path(path).expanduser()
    limit = DEFAULT_MAX_ATTACHMENT_BYTES if max_bytes is None else max_bytes
    try:
        size = file.stat().st_size
        if size > limit:
            raise ConfigError(
                f"{path}: {size_text(size)} is larger than the {size_text(limit)} an attachment "
                "may be; attach a smaller file (or a few pages of it)"
            )
        data = file.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file to attach; check the path") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory; attach files one by one") from None
    except PermissionError:
        raise ConfigError(f"{path}: permission denied; make the file readable") from None
    kind = media_type or sniff_media_type(data, file.name)
    if kind in IMAGE_MEDIA_TYPES:
        return ImageBlock.from_bytes(data, kind, name=file.name)
    if kind == "application/pdf" or is_text_media(kind):
        if is_text_media(kind):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                raise ConfigError(f"{path}: {kind} but not UTF-8 text; convert it first") from None
        return DocumentBlock.from_bytes(data, kind or "text/plain", name=file.name)
    raise ConfigError(
        f"{path}: cannot attach {kind or 'an unrecognised file type'}; attach PNG, JPEG, GIF or "
        "WebP images, PDFs or text files"
    )


__all__ = [
    "DEFAULT_MAX_ATTACHMENT_BYTES",
    "IMAGE_MEDIA_TYPES",
    "TOOL_CONTENT_TYPE",
    "Block",
    "DocumentBlock",
    "ImageBlock",
    "Message",
    "TextBlock",
    "attachment",
    "block_dict",
    "document_text",
    "has_media",
    "is_media",
    "is_text_media",
    "is_tool_content",
    "messages_have_media",
    "parse_blocks",
    "placeholder",
    "size_text",
    "sniff_media_type",
    "text_of",
    "to_dicts",
    "tool_content",
]
