"""Text a store cannot hand to its database as is: lone surrogates.

``os.fsdecode`` turns file-name bytes that are not UTF-8 into lone surrogates
(``b"report-\\xff.txt"`` becomes ``"report-\\udcff.txt"``), so a tool's output
may hold them. UTF-8 (SQLite's and PostgreSQL's text) cannot, nor can
pydantic's JSON. Stores keep such text losslessly inside JSON values, as
``\\uXXXX`` escapes that ``json.loads`` reads back into the same string; these
helpers cover the few places that are not JSON values.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import PydanticSerializationError

from avo.models import RunRecord


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8 (False when it holds a lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape_surrogates(text: str) -> str:
    """``text`` with every lone surrogate written as the visible escape ``\\udcff``.

    Not reversible (a literal backslash-u sequence reads the same): for keys
    and summaries only, never for the data itself.
    """
    if is_utf8(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    return value


def record_json(run: RunRecord) -> str:
    """A run record as JSON text (``model_dump_json``), whatever text it holds.

    A record the runtime built without validation may hold a lone surrogate
    (an error message quoting an undecodable file name, say). pydantic can
    neither write nor read that, so such characters are written as visible
    ``\\udcff`` escapes: the record is a summary, and the run's events keep
    the exact text.
    """
    try:
        return run.model_dump_json()
    except PydanticSerializationError:
        data = _escaped(run.model_dump(mode="json"))
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


__all__ = ["escape_surrogates", "is_utf8", "record_json"]
