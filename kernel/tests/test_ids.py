"""Ids: new_id() is random UUID4; the loop's event_id() is UUID-4-shaped and unique."""

from __future__ import annotations

import os
import uuid

import pytest

from avo.models import event_id, new_id


def test_event_ids_are_unique_uuid4_strings_with_distinct_short_forms() -> None:
    ids = [event_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for value in ids[:100]:
        parsed = uuid.UUID(value)
        assert parsed.version == 4 and str(parsed) == value
    # `avo runs inspect` shows the first 8 characters: consecutive ids must differ there.
    assert len({value[:8] for value in ids[:1000]}) == 1000


def test_new_id_is_random_uuid4() -> None:
    first, second = new_id(), new_id()
    assert uuid.UUID(first).version == 4 and first != second
    assert first[8:24] != second[8:24]  # not a shared prefix: fully random


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_draws_other_event_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.write(write, event_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.waitpid(pid, 0)
    os.close(read)
    mine = event_id()
    assert child[8:] != mine[8:]


def test_event_ids_keep_their_shape_across_the_counter_wrap() -> None:
    import itertools

    from avo import models

    saved = models._event_id_counter, models._event_id_suffix
    try:
        models._event_id_counter = itertools.count(0xFFFFFFFE)
        ids = [event_id() for _ in range(4)]
    finally:
        models._event_id_counter, models._event_id_suffix = saved
    assert ids[0].startswith("fffffffe") and ids[1].startswith("ffffffff")
    for text in ids:
        assert str(uuid.UUID(text)) == text and uuid.UUID(text).version == 4
    assert len(set(ids)) == 4
