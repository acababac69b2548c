from avo.redaction import (
    MASK,
    Redactor,
    is_secret_env_name,
    is_secret_key,
    redact_text,
    redact_value,
    secret_values,
)

ENV = {
    "AVO_OPENAI_API_KEY": "abc123-secret-openai",
    "GITHUB_TOKEN": "gh-token-value-999",
    "DB_PASSWORD": "hunter2hunter2",
    "CLIENT_SECRET": "shh-its-a-secret",
    "AVO_NOTIFY_DESKTOP": "1",
    "PATH": "/usr/bin",
    "SHORT_KEY": "ab",
}


def test_secret_env_names_and_values():
    assert is_secret_env_name("AVO_OPENAI_API_KEY")
    assert is_secret_env_name("db_password")
    assert not is_secret_env_name("PATH")
    values = secret_values(ENV)
    assert values == {
        "abc123-secret-openai",
        "gh-token-value-999",
        "hunter2hunter2",
        "shh-its-a-secret",
    }


def test_env_values_are_masked_anywhere_in_text():
    text = "calling with key=abc123-secret-openai and hunter2hunter2 in url /x/gh-token-value-999/"
    out = redact_text(text, environ=ENV)
    for secret in secret_values(ENV):
        assert secret not in out
    assert out.count(MASK) == 3


def test_bearer_and_key_shapes_are_masked_without_env():
    text = (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig "
        "key sk-ant-api03-AAAABBBBCCCCDDDD and gsk_abcdefghijklmnop "
        "url https://x/?api_key=zzz999yyy&x=1"
    )
    out = redact_text(text, environ={})
    assert "eyJhbGciOiJIUzI1NiJ9" not in out
    assert "sk-ant-api03-AAAABBBBCCCCDDDD" not in out
    assert "gsk_abcdefghijklmnop" not in out
    assert "zzz999yyy" not in out
    assert "Bearer ***" in out
    assert "&x=1" in out


def test_ordinary_text_is_left_alone():
    text = "token budget exceeded after 1200 input_tokens; idempotency_key=abcd1234"
    assert redact_text(text, environ={}) == text


def test_secret_keys_in_mappings():
    assert is_secret_key("api_key")
    assert is_secret_key("Authorization")
    assert is_secret_key("AVO_OPENAI_API_KEY")
    assert is_secret_key("refresh_token")
    assert not is_secret_key("idempotency_key")
    assert not is_secret_key("input_tokens")
    assert not is_secret_key("cache_key")
    payload = {
        "api_key": "plain-value",
        "headers": {"Authorization": "Basic Zm9vOmJhcg=="},
        "nested": [{"note": "uses abc123-secret-openai"}],
        "input_tokens": 5,
        "empty_token": "",
    }
    out = redact_value(payload, environ=ENV)
    assert out["api_key"] == MASK
    assert out["headers"]["Authorization"] == MASK
    assert out["nested"][0]["note"] == f"uses {MASK}"
    assert out["input_tokens"] == 5
    assert out["empty_token"] == ""
    assert payload["api_key"] == "plain-value"  # input not mutated


def test_redactor_learns_new_secrets_and_prefers_longest():
    redactor = Redactor(environ={"A_KEY": "abcd"})
    redactor.add("abcdefgh", "x")  # "x" is too short to be a secret
    assert redactor.text("abcdefgh abcd x") == f"{MASK} {MASK} x"


def test_clean_payloads_are_returned_as_is_and_dirty_ones_copied():
    from enum import StrEnum

    class Colour(StrEnum):
        RED = "red"

    redactor = Redactor(environ={"X_TOKEN": "tok-abcdef-123"})
    clean = {"step": 1, "usage": {"input_tokens": 5}, "items": [Colour.RED, 1.5, None, ("a",)]}
    assert redactor.value(clean) is clean
    nested_key = {"calls": [{"args": {"password": "pw"}}]}
    out = redactor.value(nested_key)
    assert out == {"calls": [{"args": {"password": MASK}}]} and out is not nested_key
    nested_value = {"calls": [("x", "uses tok-abcdef-123")]}
    assert redactor.value(nested_value) == {"calls": [("x", f"uses {MASK}")]}
    shaped = ["ok", {"note": "Bearer abcdefghijkl"}]
    assert redactor.value(shaped) == ["ok", {"note": f"Bearer {MASK}"}]
