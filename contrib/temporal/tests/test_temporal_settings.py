"""``[engine.settings]``: the heartbeat timeout (how long a silent worker counts as alive)."""

from __future__ import annotations

import pytest

from avo.exceptions import ConfigError
from avo_temporal.settings import load_settings


def test_the_heartbeat_timeout_comes_from_the_file_or_the_environment() -> None:
    assert load_settings({}, {}).heartbeat_seconds == 5.0
    assert load_settings({"heartbeat_seconds": 30}, {}).heartbeat_seconds == 30.0
    environ = {"AVO_TEMPORAL_HEARTBEAT_SECONDS": "45"}
    assert load_settings({"heartbeat_seconds": 30}, environ).heartbeat_seconds == 45.0


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (0, "greater than 0"),
        (-3, "greater than 0"),
        (900, "less than or equal to 300"),
        ("soon", "a valid number"),
    ],
)
def test_a_bad_heartbeat_timeout_is_one_line_naming_it(value: object, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings({"heartbeat_seconds": value}, {})
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(
        "[engine.settings] heartbeat_seconds (or AVO_TEMPORAL_HEARTBEAT_SECONDS): "
    )
    assert problem in message and f"(got {value!r}; give seconds, e.g. the default 5)" in message
