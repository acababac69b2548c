"""The decision table, env configuration, the env-gated callback, plugin factories."""

from __future__ import annotations

import pytest

from avo.approval import AnswerKind, HumanRequest, RequestKind, Verdict
from avo.exceptions import AvoError, ConfigError
from avo.models import ToolCall, ToolMetadata, ToolRisk
from avo_permissions import (
    Decision,
    PermissionMode,
    PermissionPolicy,
    build_approval_callback,
    build_env_approval_callback,
    build_mode_callback,
    decide,
    permission_policy_from_env,
    required_tool_names,
    should_require_approval,
)
from avo_permissions import plugin as permission_plugins

A, K, D = Decision.APPROVE, Decision.ASK, Decision.DENY
INS, M, X = ToolRisk.INSPECT, ToolRisk.MODIFY, ToolRisk.EXECUTE


@pytest.mark.parametrize(
    ("mode", "risk", "plan_submitted", "expected"),
    [
        ("bypass_permissions", X, False, A),
        ("bypass_permissions", None, False, A),
        ("default", INS, False, A),
        ("default", M, False, K),
        ("default", X, False, K),
        ("default", None, False, K),  # undeclared -> EXECUTE, never the permissive class
        ("accept_edits", INS, False, A),
        ("accept_edits", M, False, A),
        ("accept_edits", X, False, K),
        ("accept_edits", None, False, K),
        ("plan", INS, False, A),
        ("plan", M, False, D),
        ("plan", M, True, A),
        ("plan", X, True, K),
        ("plan", None, True, K),
    ],
)
def test_decision_table(
    mode: str, risk: ToolRisk | None, plan_submitted: bool, expected: Decision
) -> None:
    assert (
        decide("some_tool", PermissionMode(mode), risk=risk, plan_submitted=plan_submitted)
        is expected
    )
    assert should_require_approval(
        "some_tool", PermissionMode(mode), risk=risk, plan_submitted=plan_submitted
    ) is (expected is not A)


def test_explicit_list_always_asks_except_under_bypass() -> None:
    for mode in ("default", "accept_edits", "plan"):
        assert (
            decide("read_file", PermissionMode(mode), risk=INS, require_approval=["read_file"]) is K
        )
    assert (
        decide(
            "read_file", PermissionMode.BYPASS_PERMISSIONS, risk=INS, require_approval=["read_file"]
        )
        is A
    )


def test_submit_plan_is_approved_in_plan_mode() -> None:
    assert decide("submit_plan", PermissionMode.PLAN, risk=INS) is A


def test_policy_from_env() -> None:
    policy = permission_policy_from_env(
        {"AVO_PERMISSION_MODE": "Accept_Edits", "AVO_TOOLS_REQUIRE_APPROVAL": "a, b\nc a"}
    )
    assert policy == PermissionPolicy(
        mode=PermissionMode.ACCEPT_EDITS, require_approval=("a", "b", "c")
    )
    assert permission_policy_from_env({}).mode is PermissionMode.DEFAULT
    with pytest.raises(ConfigError, match=r"AVO_PERMISSION_MODE='yolo'.*choose one of: default"):
        permission_policy_from_env({"AVO_PERMISSION_MODE": "yolo"})
    with pytest.raises(Exception, match="frozen"):
        policy.mode = PermissionMode.PLAN  # type: ignore[misc]


async def test_callback_from_env() -> None:
    from avo_permissions import approval_callback_from_env

    tools = [ToolMetadata(name="w", description="d", input_schema={}, risk=ToolRisk.MODIFY)]
    callback = approval_callback_from_env(
        {"AVO_PERMISSION_MODE": "accept_edits", "AVO_TOOLS_REQUIRE_APPROVAL": "w"},
        tools=tools,
        prompter=lambda call: False,
    )
    assert callback.policy.mode is PermissionMode.ACCEPT_EDITS
    verdict = await callback(ToolCall(name="w"))  # listed: a person is asked
    assert (
        verdict.verdict is Verdict.ASK
        and verdict.rule == "mode accept_edits (require_approval lists w)"
    )


def test_env_gated_callback() -> None:
    env = {"AVO_TOOLS_REQUIRE_APPROVAL": "run_shell,git_commit"}
    assert required_tool_names(env) == {"run_shell", "git_commit"}
    seen: list[str] = []
    approve = build_env_approval_callback(env, on_require=lambda call: seen.append(call.name))
    assert approve(ToolCall(name="read_file")) is True
    assert approve(ToolCall(name="run_shell")) is False
    assert seen == ["run_shell"]
    assert build_env_approval_callback({})(ToolCall(name="run_shell")) is True


async def test_third_party_tool_is_classified_by_its_own_metadata() -> None:
    declared = ToolMetadata(name="lookup", description="d", input_schema={}, risk=ToolRisk.INSPECT)
    undeclared = ToolMetadata(name="mystery", description="d", input_schema={})
    asked: list[str] = []
    callback = build_mode_callback(
        "accept_edits",
        tools=[declared, undeclared],
        prompter=lambda c: asked.append(c.name) or False,
    )
    assert (await callback(ToolCall(name="lookup"))).verdict is Verdict.ALLOW
    assert (await callback(ToolCall(name="mystery"))).verdict is Verdict.ASK  # unclassified
    assert (await callback(ToolCall(name="never_registered"))).verdict is Verdict.ASK
    assert asked == []  # the callback only decides; the runtime asks (durably)
    assert [r.risk for r in callback.records] == [
        ToolRisk.INSPECT,
        ToolRisk.EXECUTE,
        ToolRisk.EXECUTE,
    ]


async def test_async_prompter_and_plan_marking() -> None:
    async def prompter(call: ToolCall) -> bool:
        return True

    tools = [
        ToolMetadata(name="submit_plan", description="d", input_schema={}, risk=ToolRisk.INSPECT),
        ToolMetadata(name="write_file", description="d", input_schema={}, risk=ToolRisk.MODIFY),
    ]
    callback = build_approval_callback(
        PermissionPolicy(mode=PermissionMode.PLAN), tools=tools, prompter=prompter
    )
    assert (await callback(ToolCall(name="write_file"))).verdict is Verdict.DENY
    assert (await callback(ToolCall(name="submit_plan"))).verdict is Verdict.ALLOW
    assert callback.plan_submitted is True
    assert (await callback(ToolCall(name="write_file"))).verdict is Verdict.ALLOW
    answerer = callback.answerer  # the prompter answers the runtime's pauses
    assert answerer is not None
    request = HumanRequest(
        run_id="r", tool_call_id="c", kind=RequestKind.APPROVAL, tool_name="write_file"
    )
    assert (await answerer(request)).kind is AnswerKind.APPROVE  # type: ignore[union-attr]


async def test_entry_point_factories_merge_settings_and_env() -> None:
    asked: list[str] = []
    for mode in PermissionMode:
        (spec,) = getattr(permission_plugins, mode.value).specs
        assert spec.name == mode.value
    (spec,) = permission_plugins.bypass_permissions.specs
    callback = spec.factory(
        {"require_approval": ["x"], "prompter": lambda c: asked.append(c.name) or True},
        environ={"AVO_TOOLS_REQUIRE_APPROVAL": "y"},
        tools=[],
    )
    assert callback.policy.require_approval == ("x", "y")
    assert (await callback(ToolCall(name="x"))).verdict is Verdict.ALLOW  # bypass never asks
    assert asked == []
    (spec,) = permission_plugins.default.specs
    callback = spec.factory({}, environ={}, tools=[])
    assert callback.policy.mode is PermissionMode.DEFAULT
    with pytest.raises(Exception, match="extra"):
        spec.factory({"bogus": 1}, environ={}, tools=[])
    assert issubclass(ConfigError, AvoError)
