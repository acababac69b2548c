"""Content blocks (text, images, documents) in each vendor family's wire format.

The kernel hands an adapter messages whose ``content`` is a string or a list of
blocks (:mod:`avo.content_blocks`): ``{"type": "text"}``, ``{"type": "image"}``
and ``{"type": "document"}``, each medium holding ``data`` (base64) or ``url``
(blob references are resolved, and media the model cannot take replaced by
text placeholders, before a request reaches the adapter). Here those blocks
become what each vendor documents:

* OpenAI Chat Completions: ``text`` / ``image_url`` / ``file`` parts; a tool
  message may hold text only, so images and files a tool returned follow the
  batch's tool messages in one user message;
* OpenAI Responses: ``input_text`` / ``input_image`` / ``input_file`` parts, also
  as a ``function_call_output``'s output;
* Anthropic Messages: ``text`` / ``image`` / ``document`` blocks, also inside
  a ``tool_result``;
* Gemini: ``text`` / ``inlineData`` / ``fileData`` parts; a function's media go
  in its ``functionResponse.parts``;
* Ollama ``/api/chat``: the text as ``content`` and the images' base64 in
  ``images`` (no documents).
"""

from __future__ import annotations

from typing import Any

from avo.content_blocks import document_text, is_media, placeholder


def is_blocks(content: Any) -> bool:
    """True when ``content`` is a list of content blocks holding an image or a document."""
    return type(content) is list and any(is_media(block) for block in content)


def data_url(block: dict[str, Any]) -> str:
    """``data:<media type>;base64,<data>`` for a block holding bytes, else its URL."""
    if block.get("url"):
        return str(block["url"])
    return f"data:{block.get('media_type')};base64,{block.get('data')}"


def _file_name(block: dict[str, Any]) -> str:
    name = block.get("name")
    if name:
        return str(name)
    return "document.pdf" if block.get("media_type") == "application/pdf" else "document"


def _text_of_document(block: dict[str, Any]) -> str:
    text = document_text(block)
    if text is None:
        return str(placeholder(block, "the vendor takes no such document")["text"])
    return f"[{_file_name(block)} ({block.get('media_type')})]\n{text}"


def text_only(content: Any) -> str:
    """The text blocks of ``content`` joined (media dropped), or ``content`` itself."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(block.get("text") or "")
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )


def media_note(content: list[Any]) -> str:
    """What a text-only tool message says about the media that follow it."""
    count = sum(1 for block in content if is_media(block))
    noun = "attachment" if count == 1 else "attachments"
    return f"[{count} {noun} returned by this tool follow in the next message]"


# ---------------------------------------------------------------- OpenAI Chat Completions
def openai_chat_parts(content: list[Any]) -> list[dict[str, Any]]:
    """Chat Completions content parts for blocks (``text``, ``image_url``, ``file``)."""
    parts: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": str(block.get("text") or "")})
        elif kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": data_url(block)}})
        elif kind == "document":
            if block.get("media_type") == "application/pdf" and block.get("data"):
                file: dict[str, Any] = {"filename": _file_name(block), "file_data": data_url(block)}
                parts.append({"type": "file", "file": file})
            else:
                parts.append({"type": "text", "text": _text_of_document(block)})
    return parts


# ---------------------------------------------------------------- OpenAI Responses
def responses_parts(content: Any) -> list[dict[str, Any]]:
    """Responses API input content (``input_text``, ``input_image``, ``input_file``)."""
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "input_text", "text": str(block.get("text") or "")})
        elif kind == "image":
            parts.append({"type": "input_image", "image_url": data_url(block), "detail": "auto"})
        elif kind == "document" and block.get("media_type") == "application/pdf":
            if block.get("url"):
                parts.append({"type": "input_file", "file_url": str(block["url"])})
            else:
                parts.append(
                    {
                        "type": "input_file",
                        "filename": _file_name(block),
                        "file_data": data_url(block),
                    }
                )
        elif kind == "document":
            parts.append({"type": "input_text", "text": _text_of_document(block)})
    return parts


def responses_function_output(call_id: str, content: Any) -> dict[str, Any]:
    """A ``function_call_output`` input item: a string, or parts when media came back."""
    output: Any = content if isinstance(content, str) else responses_parts(content)
    if not isinstance(content, str) and not is_blocks(content):
        output = text_only(content)
    return {"type": "function_call_output", "call_id": call_id, "output": output}


# ---------------------------------------------------------------- Anthropic Messages
def anthropic_blocks(content: list[Any]) -> list[dict[str, Any]]:
    """Messages API content blocks (``text``, ``image``, ``document``)."""
    out: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                out.append({"type": "text", "text": str(block["text"])})
        elif kind == "image":
            out.append({"type": "image", "source": _anthropic_source(block)})
        elif kind == "document":
            media_type = str(block.get("media_type") or "")
            if media_type == "application/pdf":
                source = _anthropic_source(block)
            else:
                text = document_text(block)
                if text is None:
                    out.append({"type": "text", "text": _text_of_document(block)})
                    continue
                source = {"type": "text", "media_type": "text/plain", "data": text}
            document: dict[str, Any] = {"type": "document", "source": source}
            if block.get("name"):
                document["title"] = str(block["name"])
            out.append(document)
    return out


def _anthropic_source(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("url"):
        return {"type": "url", "url": str(block["url"])}
    return {"type": "base64", "media_type": block.get("media_type"), "data": block.get("data")}


# ---------------------------------------------------------------- Gemini
def gemini_media_part(block: dict[str, Any]) -> dict[str, Any]:
    """An ``inlineData`` (bytes) or ``fileData`` (URL) part for an image or a document."""
    if block.get("url"):
        return {"fileData": {"mimeType": block.get("media_type"), "fileUri": str(block["url"])}}
    return {"inlineData": {"mimeType": block.get("media_type"), "data": block.get("data")}}


def gemini_parts(content: list[Any]) -> list[dict[str, Any]]:
    """Gemini parts for blocks (``text``, ``inlineData``, ``fileData``)."""
    parts: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                parts.append({"text": str(block["text"])})
        elif kind == "image" or (
            kind == "document" and block.get("media_type") == "application/pdf"
        ):
            parts.append(gemini_media_part(block))
        elif kind == "document":
            parts.append({"text": _text_of_document(block)})
    return parts


# ---------------------------------------------------------------- Ollama
def ollama_content(content: list[Any]) -> tuple[str, list[str]]:
    """``(text, images)`` for an Ollama message: images as bare base64 strings."""
    texts: list[str] = []
    images: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "image" and block.get("data"):
            images.append(str(block["data"]))
        elif kind == "image":
            texts.append(str(placeholder(block, "Ollama takes images only as bytes")["text"]))
        elif kind == "document":
            texts.append(_text_of_document(block))
    return "\n".join(text for text in texts if text), images


__all__ = [
    "anthropic_blocks",
    "data_url",
    "gemini_media_part",
    "gemini_parts",
    "is_blocks",
    "media_note",
    "ollama_content",
    "openai_chat_parts",
    "responses_function_output",
    "responses_parts",
    "text_only",
]
