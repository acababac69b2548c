"""Tools declare what running a call again does; undeclared ones get a cautious default."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from avo import FunctionTool
from avo.models import ToolEffect, ToolMetadata, ToolRisk
from avo.plugins import ToolSpec
from avo.testing.tools import ToolContractError, check_tool_spec


class _Args(BaseModel):
    text: str


def _tool(**kwargs: object) -> FunctionTool[_Args]:
    return FunctionTool(
        name="t", description="d", arguments_model=_Args, function=lambda a: a.text, **kwargs
    )


@pytest.mark.parametrize(
    ("risk", "declared", "effective"),
    [
        (ToolRisk.INSPECT, None, ToolEffect.PURE),
        (ToolRisk.MODIFY, None, ToolEffect.NON_IDEMPOTENT),
        (ToolRisk.EXECUTE, None, ToolEffect.NON_IDEMPOTENT),
        (None, None, ToolEffect.NON_IDEMPOTENT),
        (ToolRisk.MODIFY, ToolEffect.IDEMPOTENT, ToolEffect.IDEMPOTENT),
        (ToolRisk.INSPECT, ToolEffect.NON_IDEMPOTENT, ToolEffect.NON_IDEMPOTENT),
    ],
)
def test_the_effective_effect(
    risk: ToolRisk | None, declared: ToolEffect | None, effective: ToolEffect
) -> None:
    metadata = _tool(risk=risk, effect=declared).metadata
    assert metadata.effect is declared and metadata.effective_effect is effective


def test_metadata_takes_the_effect_by_value_and_refuses_an_unknown_one() -> None:
    made = ToolMetadata(name="t", description="d", input_schema={}, effect="idempotent")
    assert made.effect is ToolEffect.IDEMPOTENT
    with pytest.raises(ValueError, match="pure"):
        ToolMetadata(name="t", description="d", input_schema={}, effect="twice")


def test_a_spec_and_its_tool_must_declare_the_same_effect() -> None:
    def factory(settings: dict[str, object]) -> FunctionTool[_Args]:
        return _tool(risk=ToolRisk.MODIFY, effect=ToolEffect.IDEMPOTENT)

    spec = ToolSpec(name="t", factory=factory, risk=ToolRisk.MODIFY, effect=ToolEffect.IDEMPOTENT)
    check_tool_spec(spec)
    with pytest.raises(ToolContractError, match=r"ToolSpec\.effect is 'pure'"):
        check_tool_spec(
            ToolSpec(name="t", factory=factory, risk=ToolRisk.MODIFY, effect=ToolEffect.PURE)
        )
