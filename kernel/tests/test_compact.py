import pytest

from avo.compact import (
    PLACEHOLDER_NOTE,
    acompact_messages,
    compact_messages,
    estimate_message_count,
)


def convo(n: int) -> list[dict]:
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for i in range(n):
        msgs.append({"role": "assistant", "content": f"a{i}"})
        msgs.append({"role": "user", "content": f"u{i}"})
    return msgs


def test_short_conversation_is_returned_unchanged_as_copy():
    msgs = convo(2)
    out = compact_messages(msgs, keep_last=8)
    assert out == msgs and out is not msgs and out[0] is not msgs[0]


def test_middle_replaced_with_placeholder_keeping_head_and_tail():
    msgs = convo(10)  # 22 messages
    out = compact_messages(msgs, keep_last=4)
    assert out[:2] == msgs[:2]
    assert out[2] == {"role": "system", "content": PLACEHOLDER_NOTE.format(count=16)}
    assert out[3:] == msgs[-4:]
    assert len(msgs) == 22  # input untouched


def test_without_keep_first_user_only_system_head_is_kept():
    out = compact_messages(convo(10), keep_last=2, keep_first_user=False)
    assert [m["role"] for m in out] == ["system", "system", "assistant", "user"]
    assert "19 earlier" in out[1]["content"]


def test_tail_never_starts_with_orphan_tool_message():
    msgs = [
        *convo(5),
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
        {"role": "tool", "tool_call_id": "c2", "content": "out2"},
    ]
    out = compact_messages(msgs, keep_last=2)
    assert out[3]["role"] == "assistant" and out[3].get("tool_calls")
    assert [m["role"] for m in out[4:]] == ["tool", "tool"]


def test_sync_summarizer_receives_dropped_middle():
    seen: list[list[dict]] = []

    def summarize(middle: list[dict]) -> str:
        seen.append(middle)
        return "they talked"

    msgs = convo(6)
    out = compact_messages(msgs, keep_last=2, summarize_callable=summarize)
    assert seen[0] == msgs[2:-2]
    assert out[2]["content"].endswith("they talked")
    assert "Summary of 10 earlier messages" in out[2]["content"]


def test_async_summarizer_needs_acompact():
    async def summarize(middle: list[dict]) -> str:
        return "async summary"

    with pytest.raises(TypeError, match="acompact_messages"):
        compact_messages(convo(6), keep_last=2, summarize_callable=summarize)  # type: ignore[arg-type]


async def test_acompact_messages_awaits_summarizer():
    async def summarize(middle: list[dict]) -> str:
        return f"{len(middle)} msgs"

    out = await acompact_messages(convo(6), keep_last=2, summarize_callable=summarize)
    assert out[2]["content"].endswith("10 msgs")


def test_estimate_message_count_and_bad_keep_last():
    assert estimate_message_count(convo(3)) == 8
    assert estimate_message_count([{"content": "no role"}]) == 0
    with pytest.raises(ValueError, match="keep_last"):
        compact_messages(convo(3), keep_last=-1)
