import pytest

from avo.context_advisor import (
    estimate_text_tokens,
    evaluate_session_context,
    get_model_context_limit,
)
from avo.exceptions import ConfigError


@pytest.mark.parametrize(
    ("model", "limit"),
    [
        ("gemini-2.5-pro", 1_000_000),
        ("claude-3-5-sonnet", 200_000),
        ("gpt-4o-mini", 128_000),
        ("llama3.1:8b", 128_000),
        ("llama3", 8_192),
        ("deepseek-chat", 64_000),
        ("qwen2.5-coder", 32_768),
        ("mistral-large", 32_768),
        ("something-else", 8_192),
    ],
)
def test_known_limits(model, limit):
    assert get_model_context_limit(model, environ={}) == limit


def test_env_override_has_a_floor_and_validates():
    assert get_model_context_limit("gpt-4o", {"AVO_CONTEXT_WINDOW_LIMIT": "50000"}) == 50_000
    assert get_model_context_limit("gpt-4o", {"AVO_CONTEXT_WINDOW_LIMIT": "10"}) == 1_000
    with pytest.raises(ConfigError, match="AVO_CONTEXT_WINDOW_LIMIT"):
        get_model_context_limit("x", {"AVO_CONTEXT_WINDOW_LIMIT": "lots"})


def test_estimate_text_tokens():
    assert estimate_text_tokens("") == 1
    assert estimate_text_tokens("x" * 400) == 100


def test_report_levels():
    env = {"AVO_CONTEXT_WINDOW_LIMIT": "1000"}
    ok = evaluate_session_context([{"role": "user", "content": "x" * 400}], "m", environ=env)
    assert ok.estimated_tokens == 100 and ok.usage_percent == 10.0
    assert not ok.is_warning and not ok.is_critical and ok.warning_threshold == 0.8
    warn = evaluate_session_context(["x" * 3400], "m", environ=env)
    assert warn.is_warning and not warn.is_critical and "/compact" in warn.advice_message
    crit = evaluate_session_context([], "m", last_turn_tokens=990, environ=env)
    assert (
        crit.is_critical and crit.estimated_tokens == 990 and "new session" in (crit.advice_message)
    )


def test_warning_threshold_env():
    env = {"AVO_CONTEXT_WINDOW_LIMIT": "1000", "AVO_CONTEXT_WARNING_THRESHOLD": "0.5"}
    assert evaluate_session_context(["x" * 2400], "m", environ=env).is_warning
    with pytest.raises(ConfigError, match="between 0 and 1"):
        evaluate_session_context([], "m", environ={"AVO_CONTEXT_WARNING_THRESHOLD": "5"})
