import pytest

from avo.deprecation import (
    DeprecatedSymbol,
    deprecated,
    deprecation_index,
    kernel_version,
)
from avo.exceptions import AvoError


@deprecated(since="0.9", removal="2.0", replacement="new_add")
def old_add(a: int, b: int) -> int:
    return a + b


@deprecated(since="1.0", removal="1.1", strict=True, current_version=lambda: "1.1.0")
def gone() -> None:
    raise AssertionError("never runs")


@deprecated(since="1.0", removal="3", current_version=lambda: "1.0")
class OldThing:
    def __init__(self, x: int) -> None:
        self.x = x


def test_warns_with_replacement_and_still_works():
    with pytest.warns(DeprecationWarning, match="old_add is deprecated since 0.9 .* use new_add"):
        assert old_add(1, 2) == 3


def test_strict_past_removal_raises():
    with pytest.raises(DeprecatedSymbol, match=r"was removed in 1\.1") as info:
        gone()
    assert isinstance(info.value, AvoError) and info.value.removal == "1.1"


def test_classes_warn_on_construction():
    with pytest.warns(DeprecationWarning, match="OldThing"):
        assert OldThing(4).x == 4


def test_index_lists_every_symbol():
    names = {info.symbol.rsplit(".", 1)[-1]: info for info in deprecation_index()}
    assert {"old_add", "gone", "OldThing"} <= set(names)
    assert names["gone"].strict and names["old_add"].replacement == "new_add"


def test_bad_versions_rejected():
    with pytest.raises(ValueError, match="must come after"):
        deprecated(since="2.0", removal="1.0")
    with pytest.raises(ValueError, match="dotted version"):
        deprecated(since="x", removal="1.0")


def test_kernel_version_is_a_version():
    assert kernel_version()[0].isdigit()
