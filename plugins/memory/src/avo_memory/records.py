"""What both memory stores share: records, scopes, dedup keys, query terms, recency.

A memory belongs to one **scope**: ``workspace`` memories are kept per
workspace directory (the key is a hash of its resolved path), ``user``
memories are shared by every workspace of the user. A store opened for one
scope recalls, lists and forgets only that scope's memories.

**Dedup**: two memories whose text is equal once case and whitespace are
folded are one memory; writing it again refreshes it (its ``updated_at`` and
``hits``) instead of adding a copy.

**Ranking**: the database ranks by text relevance (BM25 in SQLite, ``ts_rank``
in PostgreSQL) and returns a few times ``k`` candidates; :func:`rerank` blends
each candidate's relevance (relative to the best candidate) with its recency,
a half-life decay on when it was last written::

    score = relevance * ((1 - recency_weight) + recency_weight * 0.5 ** (age / half_life))
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from avo.exceptions import MemoryStoreError

Clock = Callable[[], float]
SCOPES = ("workspace", "user")
DAY = 86_400.0
MAX_QUERY_TERMS = 24
MAX_CONTENT_CHARS = 20_000

_WORD = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+")
# Words too common to say anything about relevance (they only slow the search down).
_STOPWORDS = """a about above after again all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself
    just me more most my no nor not now of off on once only or other our ours out over own
    please same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours"""
STOPWORDS = frozenset(_STOPWORDS.split())


@dataclass(frozen=True)
class MemoryRecord:
    """One stored memory (``score`` is set by recall: higher is more relevant)."""

    memory_id: str
    content: str
    scope: str
    tags: tuple[str, ...] = ()
    session_id: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    hits: int = 1
    score: float | None = None

    @property
    def created(self) -> str:
        """``created_at`` as an ISO 8601 UTC timestamp."""
        return datetime.fromtimestamp(self.created_at, UTC).isoformat(timespec="seconds")

    @property
    def updated(self) -> str:
        """``updated_at`` as an ISO 8601 UTC timestamp."""
        return datetime.fromtimestamp(self.updated_at, UTC).isoformat(timespec="seconds")

    def as_json(self) -> dict[str, object]:
        """The record as plain JSON values (what ``avo memory --json`` prints)."""
        data: dict[str, object] = {
            "memory_id": self.memory_id,
            "content": self.content,
            "scope": self.scope,
            "tags": list(self.tags),
            "session_id": self.session_id,
            "created_at": self.created,
            "updated_at": self.updated,
            "hits": self.hits,
        }
        if self.score is not None:
            data["score"] = round(self.score, 6)
        return data


def normalized(content: str) -> str:
    """Case- and whitespace-folded text (what dedup compares)."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", content)).strip().casefold()


def digest(content: str) -> str:
    """The dedup key of ``content``."""
    return hashlib.sha256(normalized(content).encode()).hexdigest()[:32]


def query_terms(query: str) -> list[str]:
    """The distinct, lower-cased words of ``query`` worth searching for (stopwords dropped)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.casefold()):
        if (len(word) > 1 or word.isdigit()) and word not in STOPWORDS:
            seen.setdefault(word, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(seen)


def scope_key(scope: str, workspace: str | Path | None) -> str:
    """The key memories of ``scope`` are stored under (``user`` or ``ws-<hash>``)."""
    if scope == "user":
        return "user"
    if scope != "workspace":
        raise MemoryStoreError(f"unknown memory scope {scope!r}; choose workspace or user")
    directory = Path(workspace or Path.cwd()).expanduser().resolve()
    return "ws-" + hashlib.sha256(str(directory).encode()).hexdigest()[:16]


def default_directory(environ: Mapping[str, str]) -> Path:
    """Where memories live by default: ``$AVO_MEMORY_DIR``, else ``$HOME/.avo``."""
    configured = environ.get("AVO_MEMORY_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    home = environ.get("HOME", "").strip()
    if not home:
        raise MemoryStoreError(
            "no home directory to keep memories in (HOME is not set); set [memory.settings] "
            "path in avo.toml or AVO_MEMORY_DIR"
        )
    return Path(home) / ".avo"


def rerank(
    candidates: Iterable[tuple[MemoryRecord, float]],
    *,
    k: int,
    now: float,
    recency_weight: float,
    half_life_days: float,
) -> list[MemoryRecord]:
    """The ``k`` best of ``(record, relevance)`` pairs (higher is better; 0 or less: dropped)."""
    items = [(record, relevance) for record, relevance in candidates if relevance > 0.0]
    if not items:
        return []
    best = max(relevance for _, relevance in items) or 1.0
    half_life = max(half_life_days, 1e-6) * DAY
    scored = []
    for record, relevance in items:
        age = max(now - record.updated_at, 0.0)
        fresh = 0.5 ** (age / half_life)
        score = (relevance / best) * ((1.0 - recency_weight) + recency_weight * fresh)
        scored.append(replace(record, score=score))
    scored.sort(key=lambda r: (-(r.score or 0.0), -r.updated_at))
    return scored[:k]


_SUFFIXES = ("ingly", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly", "ment")
BM25_K1 = 1.2
BM25_B = 0.75


def light_stem(word: str) -> str:
    """``word`` without common English suffixes (enough to match plurals and tenses)."""
    stripped = True
    while stripped:
        stripped = False
        for suffix in _SUFFIXES:
            if len(word) > len(suffix) + 2 and word.endswith(suffix):
                word = word[: -len(suffix)]
                stripped = True
                break
    return word


def bm25(
    pool: Sequence[tuple[int, MemoryRecord]],
    terms: Sequence[str],
    counts: Mapping[str, int],
    *,
    cap: int,
    total: int,
) -> list[tuple[MemoryRecord, float]]:
    """Score ``pool`` by BM25 over every query word (k1 1.2, b 0.75, as FTS5 does).

    ``counts`` are how many memories hold each word, exact up to ``cap``; a word in
    more (a common word) is estimated from the share of the pool holding it, scaled
    to the ``total`` memories. Words match after :func:`light_stem` on both sides.
    """
    stems = {term: light_stem(term) for term in terms}
    by_head: dict[str, list[str]] = {}  # a word can only stem to a query stem it starts with
    for stem in set(stems.values()):
        by_head.setdefault(stem[:2], []).append(stem)
    docs = []
    for _, record in pool:
        found = _WORD.findall(record.content.casefold())
        words: dict[str, int] = {}
        for word in found:
            for stem in by_head.get(word[:2], ()):
                if word.startswith(stem) and (word == stem or light_stem(word) == stem):
                    words[stem] = words.get(stem, 0) + 1
        docs.append((record, words, len(found) or 1))
    average = sum(length for _, _, length in docs) / len(docs) if docs else 1.0
    idf: dict[str, float] = {}
    for term in terms:
        held = counts.get(term, 0)
        if held > cap:
            share = (sum(1 for _, words, _ in docs if stems[term] in words) + 0.5) / (len(docs) + 1)
            held = max(cap + 1, int(total * share))
        idf[term] = max(math.log((total - held + 0.5) / (held + 0.5)), 1e-6)
    scored = []
    for record, words, length in docs:
        score = 0.0
        for term in terms:
            tf = words.get(stems[term], 0)
            if tf:
                norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / average)
                score += idf[term] * tf * (BM25_K1 + 1.0) / (tf + norm)
        scored.append((record, max(score, 1e-9)))  # found by the index: never dropped
    return scored


def new_memory_id() -> str:
    """A fresh memory id: ``m`` and 20 random hex digits (80 bits).

    Random from the first digit, so a short prefix (what ``avo memory list``
    shows) tells memories apart even when they were written in the same
    moment; when they were written is in ``created_at``.
    """
    import secrets

    return f"m{secrets.token_hex(10)}"


def short_ids(memory_ids: Sequence[str], *, minimum: int = 9) -> dict[str, str]:
    """Each id's shortest prefix (at least ``minimum`` characters) unique among ``memory_ids``.

    Like git's abbreviated hashes: what ``avo memory list`` prints and
    ``avo memory forget`` takes back.
    """
    ordered = sorted(set(memory_ids))
    shown: dict[str, str] = {}
    for index, memory_id in enumerate(ordered):
        shared = 0  # the longest head it shares with a neighbour (sorted: the closest ids)
        for other in ordered[max(index - 1, 0) : index + 2]:
            if other != memory_id:
                same = 0
                while same < min(len(memory_id), len(other)) and memory_id[same] == other[same]:
                    same += 1
                shared = max(shared, same)
        shown[memory_id] = memory_id[: max(minimum, shared + 1)]
    return shown


def check_ids(memory_ids: Sequence[str]) -> list[str]:
    """Ids (or prefixes) to forget, stripped; refuses empty and too-short ones."""
    cleaned = [text.strip() for text in memory_ids if text.strip()]
    short = [text for text in cleaned if len(text) < 4]
    if short:
        raise MemoryStoreError(
            f"memory id prefix {short[0]!r} is too short; give at least 4 characters "
            "(avo memory list shows the ids)"
        )
    return cleaned


def tags_text(tags: Iterable[str] | None) -> tuple[str, ...]:
    """Tags as a tuple of distinct, non-empty, stripped strings."""
    return tuple(dict.fromkeys(t.strip() for t in tags or () if t and t.strip()))


__all__ = [
    "DAY",
    "SCOPES",
    "STOPWORDS",
    "MemoryRecord",
    "bm25",
    "check_ids",
    "default_directory",
    "digest",
    "light_stem",
    "new_memory_id",
    "normalized",
    "query_terms",
    "rerank",
    "scope_key",
    "short_ids",
    "tags_text",
]
