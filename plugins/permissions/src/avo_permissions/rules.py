"""``[permission]`` rules: allow / ask / deny on a tool's name and its arguments.

One evaluation order, always the same:

1. the built-in sensitive-path list (:data:`~avo_permissions.paths.SENSITIVE_PATTERNS`)
   denies — in every mode except ``bypass_permissions``;
2. the first matching **deny** rule denies;
3. the first matching **ask** rule asks a human;
4. the first matching **allow** rule approves;
5. otherwise the mode decides from the tool's declared risk (:func:`decide`).

So no allow rule can override a deny rule or the sensitive list, and an ask
rule cannot be skipped by an allow rule. A rule matches when its ``tool``
globs match the tool's name and every argument matcher it sets matches:

- ``path``: globs over the call's path arguments (see :mod:`avo_permissions.paths`);
- ``host``: URL hosts, ``example.com`` or ``*.example.com`` (subdomains only);
- ``command``: command prefixes (see :mod:`avo_permissions.commands`);
- ``text``: globs over free-text arguments, case-insensitive (``*password*``).

Deny and ask rules match if **any** argument of that kind matches (path
globs also look at the words of command arguments); allow rules match only if
the call has such arguments and **all** of them match, judged on resolved
paths inside the workspace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from avo.models import ToolCall, ToolMetadata, ToolRisk
from avo_permissions.arguments import CallArguments, classify
from avo_permissions.commands import ParsedCommand, parse_command, prefix_matches
from avo_permissions.modes import Decision, PermissionMode, decide
from avo_permissions.paths import PathResolver, ResolvedPath, glob_matches, sensitive_match


def _as_list(value: Any) -> Any:
    if isinstance(value, str):
        return [value]
    return value


class PermissionRule(BaseModel):
    """One rule. A bare string in the config (``"read_file"``) is a rule on ``tool`` alone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: tuple[str, ...] = ("*",)
    path: tuple[str, ...] = ()
    host: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    reason: str | None = Field(default=None, min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _bare_tool_name(cls, data: Any) -> Any:
        return {"tool": data} if isinstance(data, str) else data

    @field_validator("tool", "path", "host", "command", "text", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return _as_list(value)

    @field_validator("tool", "path", "host", "command", "text")
    @classmethod
    def _no_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not item.strip() for item in value):
            raise ValueError("patterns must not be empty strings")
        return value

    @classmethod
    def parse(cls, item: Any) -> PermissionRule:
        """A rule from a config entry: a tool-name string or a table."""
        if isinstance(item, PermissionRule):
            return item
        return cls.model_validate(item)

    def describe(self) -> str:
        """``tool run_shell, command "git push"``."""
        parts = [f"tool {'|'.join(self.tool)}"]
        for label, values in (
            ("path", self.path),
            ("host", self.host),
            ("command", self.command),
            ("text", self.text),
        ):
            if values:
                parts.append(f"{label} " + "|".join(f'"{v}"' for v in values))
        return ", ".join(parts)


@dataclass(frozen=True)
class PermissionDecision:
    """What the rules (or the mode) decided about one call, and why."""

    decision: Decision
    source: str  # "sensitive" | "deny" | "ask" | "allow" | "mode"
    rule: str  # the rule that decided, as text (recorded on the event)
    reason: str  # one sentence for the model, the human and the log

    @property
    def approved(self) -> bool:
        """True for APPROVE."""
        return self.decision is Decision.APPROVE


def _host(url: str) -> str | None:
    text = url.strip()
    if "://" not in text:
        text = "//" + text
    try:
        host = urlsplit(text).hostname
    except ValueError:
        return None
    return _normal_host(host) if host else None


def _normal_host(host: str) -> str:
    host = host.strip().rstrip(".").lower()
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def host_matches(pattern: str, host: str) -> bool:
    """``example.com`` exactly, ``*.example.com`` any subdomain, ``*`` anything."""
    wanted = pattern.strip().lower()
    if wanted == "*":
        return True
    if wanted.startswith("*."):
        return host.endswith("." + _normal_host(wanted[2:]))
    return host == _normal_host(wanted)


@dataclass
class _Call:
    """A call prepared once for every rule: resolved paths, parsed commands, hosts."""

    name: str
    arguments: CallArguments
    paths: list[ResolvedPath]
    command_paths: list[ResolvedPath]
    commands: list[ParsedCommand]
    hosts: list[str | None]


class RuleSet:
    """Deny, ask and allow rules over one workspace."""

    def __init__(
        self,
        *,
        allow: Iterable[Any] = (),
        ask: Iterable[Any] = (),
        deny: Iterable[Any] = (),
        workspace: str | Path = ".",
        sensitive_paths: Sequence[str] = (),
    ) -> None:
        self.allow = [PermissionRule.parse(item) for item in allow]
        self.ask = [PermissionRule.parse(item) for item in ask]
        self.deny = [PermissionRule.parse(item) for item in deny]
        self.resolver = PathResolver(workspace)
        self.sensitive_paths = tuple(sensitive_paths)

    # ------------------------------------------------------------------ preparing a call

    def prepare(self, call: ToolCall, metadata: ToolMetadata | None) -> _Call:
        """Classify and resolve ``call``'s arguments once."""
        arguments = classify(call, metadata)
        commands = [parse_command(text) for text in arguments.commands]
        words = [word for parsed in commands for word in parsed.file_words]
        return _Call(
            name=call.name,
            arguments=arguments,
            paths=[self.resolver.resolve(path) for path in arguments.paths],
            command_paths=[self.resolver.resolve(word) for word in words],
            commands=commands,
            hosts=[_host(url) for url in arguments.urls],
        )

    # ------------------------------------------------------------------ matching

    @staticmethod
    def _tool_matches(rule: PermissionRule, name: str) -> bool:
        return any(fnmatchcase(name, pattern) for pattern in rule.tool)

    def matches(self, rule: PermissionRule, call: _Call, *, strict: bool) -> bool:
        """Whether ``rule`` matches; ``strict`` for allow rules (all arguments must match)."""
        if not self._tool_matches(rule, call.name):
            return False
        checks = []
        if rule.path:
            checks.append(self._paths(rule, call, strict=strict))
        if rule.host:
            checks.append(self._hosts(rule, call, strict=strict))
        if rule.command:
            checks.append(self._commands(rule, call, strict=strict))
        if rule.text:
            checks.append(self._texts(rule, call, strict=strict))
        return all(checks)

    @staticmethod
    def _quantify(results: list[bool], *, strict: bool) -> bool:
        return bool(results) and (all(results) if strict else any(results))

    def _paths(self, rule: PermissionRule, call: _Call, *, strict: bool) -> bool:
        paths = call.paths if strict else [*call.paths, *call.command_paths]
        results = [any(glob_matches(g, p, strict=strict) for g in rule.path) for p in paths]
        return self._quantify(results, strict=strict)

    def _hosts(self, rule: PermissionRule, call: _Call, *, strict: bool) -> bool:
        results = [
            host is not None and any(host_matches(pattern, host) for pattern in rule.host)
            for host in call.hosts
        ]
        return self._quantify(results, strict=strict)

    def _commands(self, rule: PermissionRule, call: _Call, *, strict: bool) -> bool:
        results: list[bool] = []
        for parsed in call.commands:
            if strict:
                results.append(
                    parsed.analyzable
                    and bool(parsed.commands)
                    and all(
                        any(prefix_matches(p, words, by_basename=False) for p in rule.command)
                        for words in parsed.commands
                    )
                )
            else:
                results.append(
                    any(
                        prefix_matches(p, words, by_basename=True)
                        for words in parsed.commands
                        for p in rule.command
                    )
                )
        return self._quantify(results, strict=strict)

    def _texts(self, rule: PermissionRule, call: _Call, *, strict: bool) -> bool:
        results = [
            any(fnmatchcase(text.lower(), pattern.lower()) for pattern in rule.text)
            for text in call.arguments.texts
        ]
        return self._quantify(results, strict=strict)

    def sensitive(self, call: _Call) -> tuple[str, str] | None:
        """``(path as written, pattern)`` of the first argument on the sensitive list."""
        for path in [*call.paths, *call.command_paths]:
            pattern = sensitive_match(path, self.sensitive_paths)
            if pattern is not None:
                return path.raw, pattern
        return None

    # ------------------------------------------------------------------ deciding

    def evaluate(
        self,
        call: ToolCall,
        metadata: ToolMetadata | None,
        mode: PermissionMode,
        *,
        plan_submitted: bool = False,
        require_approval: Iterable[str] = (),
    ) -> PermissionDecision:
        """Decide one call: sensitive list, deny, ask, allow, then the mode (see above)."""
        mode = PermissionMode(mode)
        prepared = self.prepare(call, metadata)
        if mode is not PermissionMode.BYPASS_PERMISSIONS:
            hit = self.sensitive(prepared)
            if hit is not None:
                raw, pattern = hit
                return PermissionDecision(
                    Decision.DENY,
                    "sensitive",
                    f"sensitive path {pattern} (built-in list)",
                    f"{raw!r} matches the sensitive-path pattern {pattern!r}; avo never lets "
                    "a tool touch it (only bypass_permissions mode lifts this)",
                )
        for source, rules, decision, strict in (
            ("deny", self.deny, Decision.DENY, False),
            ("ask", self.ask, Decision.ASK, False),
            ("allow", self.allow, Decision.APPROVE, True),
        ):
            for index, rule in enumerate(rules):
                if self.matches(rule, prepared, strict=strict):
                    label = f"permission.{source}[{index}] ({rule.describe()})"
                    verb = {"deny": "denied", "ask": "needs approval", "allow": "allowed"}[source]
                    reason = rule.reason or f"{call.name} {verb} by rule {label}"
                    return PermissionDecision(decision, source, label, reason)
        risk = metadata.risk if metadata is not None else None
        outcome = decide(
            call.name,
            mode,
            risk=risk,
            plan_submitted=plan_submitted,
            require_approval=require_approval,
        )
        effective = (risk or ToolRisk.EXECUTE).value
        label = f"mode {mode.value} ({effective} tools: {outcome.value})"
        if call.name in set(require_approval) and mode is not PermissionMode.BYPASS_PERMISSIONS:
            label = f"mode {mode.value} (require_approval lists {call.name})"
        reasons = {
            Decision.APPROVE: f"{call.name} is allowed by {label}",
            Decision.ASK: f"{call.name} needs approval under {label}",
            Decision.DENY: f"{call.name} is denied by {label}",
        }
        if outcome is Decision.DENY and mode is PermissionMode.PLAN:
            reasons[Decision.DENY] = (
                f"{call.name} modifies files and plan mode allows that only after a plan "
                "is submitted with submit_plan"
            )
        return PermissionDecision(outcome, "mode", label, reasons[outcome])


def rules_from_settings(settings: Mapping[str, Any]) -> dict[str, list[PermissionRule]]:
    """The ``allow`` / ``ask`` / ``deny`` lists of a settings table, parsed."""
    return {
        key: [PermissionRule.parse(item) for item in settings.get(key) or ()]
        for key in ("allow", "ask", "deny")
    }


__all__ = [
    "PermissionDecision",
    "PermissionRule",
    "RuleSet",
    "host_matches",
    "rules_from_settings",
]
