"""The eval suite file (TOML, or YAML when PyYAML is installed) and its loader.

A suite names the avo.toml to compose and a list of cases; each case has a
task, optional workspace fixtures, an optional change to the config, and the
checks its outcome must pass::

    name = "example"
    config = "avo.toml"            # relative to this file; a case may name its own
    trials = 3                     # runs per case
    concurrency = 4                # trials running at once

    [[cases]]
    name = "writes-notes"
    task = "Write the notes file"
    fixtures = { "README.md" = "# Widget" }       # or a directory: fixtures = "files/"
    config_overrides = { policy = { max_steps = 4 } }
    checks = [
        { answer_contains = "done" },
        { tool_called = "write_file", arguments = { path = "notes.md" } },
        { file = "notes.md", contains = "Widget" },
    ]

Every error is a :class:`SuiteError` naming the file, the key and the fix.
"""

from __future__ import annotations

import re
import tomllib
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from avo.compose.config import StoreRef, dotted, read_config_file
from avo.exceptions import ConfigError
from avo.state import RunState, StopReason

CHECK_KINDS: tuple[str, ...] = (
    "answer_contains",
    "answer_not_contains",
    "answer_matches",
    "answer_equals_json",
    "tool_called",
    "tool_not_called",
    "file",
    "status",
    "stop_reason",
    "max_steps",
    "max_tokens",
    "max_input_tokens",
    "max_output_tokens",
    "max_cost_usd",
    "max_latency_seconds",
    "python",
)
"""The keys that say what a check tests; each check table has exactly one."""

_MODIFIERS: dict[str, tuple[str, ...]] = {
    "answer_contains": ("ignore_case",),
    "answer_not_contains": ("ignore_case",),
    "tool_called": ("arguments", "arguments_match", "times", "outcome"),
    "tool_not_called": ("arguments", "arguments_match"),
    "file": ("exists", "contains", "matches", "equals"),
    "python": ("args",),
}
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


class SuiteError(ConfigError):
    """An eval suite file is invalid (names the file, the key and the fix)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Check(_Strict):
    """One check on a trial's outcome: exactly one kind key, plus its modifiers."""

    label: str | None = None
    answer_contains: str | list[str] | None = None
    answer_not_contains: str | list[str] | None = None
    answer_matches: str | None = None
    answer_equals_json: Any = None
    tool_called: str | None = None
    tool_not_called: str | None = None
    file: str | None = None
    status: str | None = None
    stop_reason: str | None = None
    max_steps: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_input_tokens: int | None = Field(default=None, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_latency_seconds: float | None = Field(default=None, gt=0)
    python: str | None = None
    # modifiers
    ignore_case: bool = False
    arguments: dict[str, Any] | None = None
    arguments_match: dict[str, str] | None = None
    times: int | None = Field(default=None, ge=1)
    outcome: Literal["ok", "failed", "denied"] | None = None
    exists: bool | None = None
    contains: str | None = None
    matches: str | None = None
    equals: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)

    @property
    def kind(self) -> str:
        """The check's kind key (``answer_contains``, ``tool_called``, ...)."""
        return next(k for k in CHECK_KINDS if k in self.model_fields_set)

    @model_validator(mode="after")
    def _one_kind(self) -> Check:
        kinds = [k for k in CHECK_KINDS if k in self.model_fields_set]
        if len(kinds) != 1:
            given = ", ".join(kinds) or "none"
            raise ValueError(
                f"a check needs exactly one of {', '.join(CHECK_KINDS)} (got {given}); "
                "write one table per check"
            )
        kind = kinds[0]
        if kind != "answer_equals_json" and getattr(self, kind) is None:
            raise ValueError(f"{kind} needs a value")
        allowed = set(_MODIFIERS.get(kind, ()))
        stray = sorted(
            name
            for name in self.model_fields_set
            if name not in CHECK_KINDS and name != "label" and name not in allowed
        )
        if stray:
            shown = ", ".join(sorted(allowed)) or "none"
            raise ValueError(f"{', '.join(stray)} does not apply to {kind} (it takes: {shown})")
        patterns = [self.answer_matches, self.matches, *(self.arguments_match or {}).values()]
        for pattern in patterns:
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(
                        f"{pattern!r} is not a valid regular expression: {exc}"
                    ) from None
        if kind == "python" and not _is_dotted(self.python or ""):
            raise ValueError(
                f"python = {self.python!r} is not a dotted path; write 'module.function' or "
                "'module:function'"
            )
        if kind == "file":
            _relative(self.file or "", "file")
        _known_value(self.status, RunState, "status")
        _known_value(self.stop_reason, StopReason, "stop_reason")
        return self


def _known_value(value: str | None, enum: type[StrEnum], key: str) -> None:
    if value is not None and value not in {member.value for member in enum}:
        choices = ", ".join(member.value for member in enum)
        raise ValueError(f"{key} {value!r} is not one of: {choices}")


def _is_dotted(text: str) -> bool:
    module, _, attr = text.replace(":", ".").rpartition(".")
    parts = [*module.split("."), attr]
    return bool(module) and all(part.isidentifier() for part in parts)


def _relative(path: str, what: str) -> str:
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or ".." in pure.parts:
        raise ValueError(f"{what} path {path!r} must be relative to the workspace, without '..'")
    return path


class Case(_Strict):
    """One task, how to set it up, and what its outcome must satisfy."""

    name: str
    task: str = Field(min_length=1)
    system_prompt: str | None = None
    config: str | dict[str, Any] | None = None
    config_overrides: dict[str, Any] = Field(default_factory=dict)
    fixtures: str | dict[str, str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    trials: int | None = Field(default=None, ge=1, le=10_000)
    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    timeout_seconds: float | None = Field(default=None, gt=0)
    checks: list[Check] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME_RE.match(value):
            raise ValueError(
                f"case name {value!r} must start with a letter or digit and use only letters, "
                "digits, '_', '.', ':' and '-'"
            )
        return value

    @field_validator("fixtures")
    @classmethod
    def _fixtures(cls, value: str | dict[str, str] | None) -> str | dict[str, str] | None:
        if isinstance(value, dict):
            for path in value:
                _relative(path, "fixture")
        return value


class Suite(_Strict):
    """A whole suite file."""

    name: str | None = None
    description: str | None = None
    config: str | dict[str, Any] | None = None
    config_overrides: dict[str, Any] = Field(default_factory=dict)
    trials: int = Field(default=1, ge=1, le=10_000)
    concurrency: int = Field(default=4, ge=1, le=256)
    min_pass_rate: float = Field(default=1.0, ge=0, le=1)
    timeout_seconds: float = Field(default=300.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    store: StoreRef | None = None
    """Where every trial is recorded (``-d`` replaces its location); cases' [store] is ignored."""
    cases: list[Case] = Field(min_length=1)

    # not from the file
    path: Path = Field(default=Path("suite.toml"), exclude=True)

    @property
    def label(self) -> str:
        """The suite's name (its ``name`` key, else the file's stem)."""
        return self.name or self.path.stem

    @property
    def directory(self) -> Path:
        """The folder relative paths in the suite resolve against."""
        return self.path.parent

    @model_validator(mode="after")
    def _unique_names(self) -> Suite:
        seen: set[str] = set()
        for case in self.cases:
            if case.name in seen:
                raise ValueError(f"two cases are named {case.name!r}; give each a unique name")
            seen.add(case.name)
        return self


def _read(path: Path) -> dict[str, Any]:
    label = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SuiteError(
            f"suite file {label} does not exist; pass the path of a .toml or .yaml suite",
            file=label,
        ) from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{label}: cannot read the suite file: {exc}", file=label) from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise SuiteError(
                f"{label}: YAML suites need PyYAML: pip install 'avo-evals[yaml]' "
                "(or write the suite as TOML)",
                file=label,
            ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            where = getattr(exc, "problem_mark", None)
            at = f" (line {where.line + 1})" if where is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise SuiteError(f"{label}: not valid YAML{at}: {problem}", file=label) from None
    elif path.suffix.lower() == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SuiteError(f"{label}: not valid TOML: {exc}", file=label) from None
    else:
        raise SuiteError(
            f"{label}: unknown suite format {path.suffix or '(no suffix)'!r}; "
            "name the file .toml, .yaml or .yml",
            file=label,
        )
    if not isinstance(data, dict):
        raise SuiteError(
            f"{label}: a suite is a table of keys (name, config, trials, cases, ...), "
            f"not a {type(data).__name__}",
            file=label,
        )
    return data


def _known(loc: tuple[Any, ...]) -> str:
    if "checks" in loc:
        return "check keys: label, " + ", ".join(CHECK_KINDS) + " and their modifiers"
    if "cases" in loc:
        return "case keys: " + ", ".join(k for k in Case.model_fields)
    if loc[:1] == ("store",):
        return "store keys: name, location, settings"
    return "suite keys: " + ", ".join(k for k in Suite.model_fields if k != "path")


def _error(exc: ValidationError, label: str, data: dict[str, Any]) -> SuiteError:
    error = exc.errors()[0]
    loc = tuple(error["loc"])
    key = dotted(loc) or "(top level)"
    where = key
    if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
        cases = data.get("cases")
        if isinstance(cases, list) and loc[1] < len(cases) and isinstance(cases[loc[1]], dict):
            name = cases[loc[1]].get("name")
            if isinstance(name, str):
                where = f"{key} (case {name!r})"
    if error["type"] == "extra_forbidden":
        message = f"{label}: unknown key {where}; {_known(loc)}"
    elif error["type"] == "missing":
        message = f"{label}: {where} is required; add it"
    else:
        text = str(error["msg"]).removeprefix("Value error, ")
        got = error.get("input")
        shown = f" (got {got!r})" if isinstance(got, str | int | float | bool) else ""
        message = f"{label}: {where}: {text}{shown}"
    more = len(exc.errors()) - 1
    if more:
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return SuiteError(message, key=key, file=label)


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file; a :class:`SuiteError` names the file, key and fix."""
    file = Path(path)
    data = _read(file)
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        raise _error(exc, str(file), data) from None
    suite.path = file.resolve()
    for index, case in enumerate(suite.cases):
        _check_files(suite, case, index)
    return suite


def _check_files(suite: Suite, case: Case, index: int) -> None:
    label = str(suite.path)
    config = case.config if case.config is not None else suite.config
    if isinstance(config, str):
        target = suite.directory / config
        key = f"cases[{index}].config" if case.config is not None else "config"
        if not target.is_file():
            raise SuiteError(
                f"{label}: {key}: no avo config at {target}; fix the path (relative to the "
                "suite file) or write the config inline as a table",
                key=key,
                file=label,
            )
    if isinstance(case.fixtures, str) and not (suite.directory / case.fixtures).is_dir():
        key = f"cases[{index}].fixtures"
        raise SuiteError(
            f"{label}: {key}: no fixture directory at {suite.directory / case.fixtures}; fix the "
            "path (relative to the suite file) or list the files inline as a table",
            key=key,
            file=label,
        )


def merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``change`` merged in: tables merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def case_config(suite: Suite, case: Case) -> dict[str, Any]:
    """The avo.toml table a case composes: file or inline table, then the overrides."""
    source = case.config if case.config is not None else suite.config
    if isinstance(source, str):
        raw, _ = read_config_file(suite.directory / source)
    else:
        raw = dict(source or {})
    return merge(merge(raw, suite.config_overrides), case.config_overrides)


__all__ = ["CHECK_KINDS", "Case", "Check", "Suite", "SuiteError", "case_config", "load_suite"]
