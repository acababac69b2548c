"""Run a suite: every case N times, each trial in its own workspace and process.

A trial is a normal avo run: the case's avo.toml is composed (with
``avo.compose``) inside a child process whose working directory is a fresh
temporary workspace holding the case's fixtures, and the run is recorded in
the eval's event store, tagged in ``user_state["eval"]`` with the eval id, the
suite, the case and the trial number. Trials run concurrently up to a limit;
each is killed at its timeout. The parent then judges each outcome with the
case's checks while the workspace still exists.
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from avo.compose.config import AvoConfig, PluginRef, validation_error
from avo.exceptions import AvoError, ConfigError
from avo.models import new_id
from avo.policies import LoopPolicy
from avo.run_diff import RunFacts
from avo_evals import _toml
from avo_evals._pool import WorkerPool
from avo_evals.checks import CheckResult, Outcome, ToolCallRecord, evaluate, resolve_python_checks
from avo_evals.progress import Progress
from avo_evals.stats import wilson_interval
from avo_evals.suite import Case, Suite, SuiteError, case_config

KINDS_IN_CONFIG = (("tools", "tool"), ("hooks", "hook"), ("notifiers", "notifier"))


@dataclass
class TrialResult:
    """One trial's outcome and its checks' verdicts."""

    outcome: Outcome
    checks: list[CheckResult]

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(check.passed for check in self.checks)

    def failures(self) -> list[CheckResult]:
        """The checks that failed."""
        return [check for check in self.checks if not check.passed]


@dataclass
class CaseResult:
    """A case's trials and its pass rate."""

    name: str
    task: str
    min_pass_rate: float
    trials: list[TrialResult] = field(default_factory=list)

    @property
    def passes(self) -> int:
        """Trials that passed every check."""
        return sum(1 for trial in self.trials if trial.passed)

    @property
    def pass_rate(self) -> float:
        """Passes over trials (0 without trials)."""
        return self.passes / len(self.trials) if self.trials else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """The pass rate's 95 % Wilson interval."""
        return wilson_interval(self.passes, len(self.trials))

    @property
    def passed(self) -> bool:
        """True when the pass rate reaches the case's ``min_pass_rate``."""
        return bool(self.trials) and self.pass_rate >= self.min_pass_rate - 1e-12


@dataclass
class EvalResults:
    """Everything one ``avo eval`` produced."""

    suite: str
    suite_file: str
    eval_id: str
    store: str
    started_at: datetime
    finished_at: datetime
    provider: str | None = None
    model: str | None = None
    cases: list[CaseResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every case reached its pass rate."""
        return all(case.passed for case in self.cases)


def _absolute_location(location: str) -> str:
    if "://" in location or location.startswith("memory"):
        return location
    return str(Path(location).expanduser().resolve())


_RESOLVED_HERE = ("AVO_PROVIDER", "AVO_MODEL", "AVO_DATABASE_PATH")
"""Variables the eval resolves into each case's config; trials do not see them, because
in a trial they would replace what the case names (a scripted ``fake`` case run with
the shell's ``AVO_MODEL`` would fail)."""


def _override(
    config: dict[str, Any],
    provider: str | None,
    model: str | None,
    store: dict[str, Any],
    env: Mapping[str, str],
) -> dict[str, Any]:
    """The case's config with the eval's provider, model and store written in."""
    config = dict(config)
    current = config.get("provider") if isinstance(config.get("provider"), dict) else None
    if current is None and env.get("AVO_PROVIDER"):  # a case naming no provider
        current = {"name": env["AVO_PROVIDER"], "settings": {}}
        if env.get("AVO_MODEL"):
            current["settings"]["model"] = env["AVO_MODEL"]
    if provider:
        same = current is not None and current.get("name") == provider
        settings = dict(current.get("settings", {})) if same and current else {}
        current = {"name": provider, "settings": settings}
    if model:
        current = dict(current or {})
        current["settings"] = {**dict(current.get("settings", {})), "model": model}
    if current is not None:
        config["provider"] = current
    config["store"] = store  # every trial records in the eval's store
    return config


def _validate(suite: Suite, case: Case, index: int, config: dict[str, Any], env: Any) -> None:
    """Schema and plugin names of a case's config, checked before any trial starts."""
    label = f"{suite.path}: case {case.name!r} (cases[{index}]) config"
    try:
        parsed = AvoConfig.model_validate(config)
    except ValidationError as exc:
        raise SuiteError(
            str(validation_error(exc, file=label, model=AvoConfig)), file=str(suite.path)
        ) from None
    from avo.plugins.manager import PluginManager

    if parsed.provider is None:
        raise SuiteError(
            f"{label}: no provider: add [provider] name to the case's config or pass --provider",
            key=f"cases[{index}].config.provider",
            file=str(suite.path),
        )
    switches = parsed.plugins
    manager = PluginManager(
        environ=env, autoload=switches.autoload, block=switches.block, allow=switches.allow
    )
    wanted: list[tuple[str, str, str, dict[str, Any]]] = []
    if parsed.provider is not None:
        wanted.append(("provider", parsed.provider.name, "provider", parsed.provider.settings))
    for key, kind in KINDS_IN_CONFIG:
        for position, item in enumerate(getattr(parsed, key)):
            ref = PluginRef(name=item) if isinstance(item, str) else item
            wanted.append((kind, ref.name, f"{key}[{position}]", ref.settings))
    if parsed.permission is not None:
        permission = parsed.permission
        wanted.append(("permission", permission.mode, "permission", permission.settings))
    for kind, name, key, settings in wanted:
        names = manager.names(kind)
        if name not in names:
            raise SuiteError(
                f"{label}: {key}: no {kind} plugin named {name!r}; installed: "
                f"{', '.join(names) or '(none)'} (install the plugin or fix the name)",
                key=f"cases[{index}].config.{key}",
                file=str(suite.path),
            )
        model = getattr(manager.get(kind, name), "settings_model", None)
        _check_table(model, settings, f"{key}.settings", label, suite, index)
    _check_table(LoopPolicy, parsed.policy, "policy", label, suite, index)


def _check_table(
    model: Any, table: dict[str, Any], key: str, label: str, suite: Suite, index: int
) -> None:
    if model is None:
        return
    try:
        model.model_validate(table)
    except ValidationError as exc:
        error = validation_error(exc, file=label, prefix=key)
        known = ", ".join(sorted(model.model_fields)) or "(none)"
        raise SuiteError(
            f"{error}; {key} accepts: {known}",
            key=f"cases[{index}].config.{key}",
            file=str(suite.path),
        ) from None


def _write_fixtures(suite: Suite, case: Case, workspace: Path) -> None:
    workspace.mkdir(parents=True)
    if isinstance(case.fixtures, str):
        shutil.copytree(suite.directory / case.fixtures, workspace, dirs_exist_ok=True)
    elif case.fixtures:
        for relative, content in case.fixtures.items():
            target = workspace / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")


def _outcome(case: Case, trial: int, workspace: Path, data: Mapping[str, Any]) -> Outcome:
    if "crash" in data:
        return Outcome(case.name, trial, workspace, crash=str(data["crash"]))
    cost = data.get("cost_usd")
    return Outcome(
        case=case.name,
        trial=trial,
        workspace=workspace,
        run_id=data["run_id"],
        status=data["status"],
        stop_reason=data.get("stop_reason"),
        answer=data.get("answer"),
        error=data.get("error"),
        steps=int(data.get("steps", 0)),
        input_tokens=int(data.get("input_tokens", 0)),
        output_tokens=int(data.get("output_tokens", 0)),
        cost_usd=None if cost is None else Decimal(str(cost)),
        latency_seconds=float(data.get("latency_seconds", 0.0)),
        tool_calls=[ToolCallRecord(**call) for call in data.get("tool_calls", [])],
        facts=RunFacts.from_dict(data["facts"]) if data.get("facts") else None,
    )


def _tail(path: Path, limit: int = 400) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
    lines = [line for line in text.splitlines() if line.strip()]
    return " ".join(lines[-3:])[-limit:]


@dataclass
class _Job:
    case: Case
    trial: int
    directory: Path
    config: Path
    env: dict[str, str]
    timeout: float

    @property
    def workspace(self) -> Path:
        return self.directory / "workspace"


async def _run_trial(
    pool: WorkerPool, job: _Job, database: str, tags: dict[str, Any]
) -> Mapping[str, Any]:
    result = job.directory / "result.json"
    log = job.directory / "trial.log"
    spec = {
        "config": str(job.config),
        "database": database,
        "task": job.case.task,
        "system_prompt": job.case.system_prompt,
        "user_state": {"eval": {**tags, "case": job.case.name, "trial": job.trial}},
        "result": str(result),
        "log": str(log),
        "cwd": str(job.workspace),
        "env": job.env,
    }
    code = await pool.run(spec, job.timeout)
    if isinstance(code, str):
        why = _tail(log)
        return {"crash": code + (f": {why}" if why else "")}
    if result.is_file():
        return dict(json.loads(result.read_text(encoding="utf-8")))
    return {"crash": f"the trial wrote no result (exit {code}): {_tail(log) or 'no output'}"}


async def _prepare_store(table: dict[str, Any], env: Mapping[str, str]) -> None:
    """Open the eval's store once before any trial: a bad location fails here, and a new
    database is created by one process rather than by every worker at once."""
    from avo.compose import open_store

    location = table["location"]
    try:
        store = open_store(
            location, name=table.get("name"), settings=table.get("settings"), environ=env
        )
        if inspect.isawaitable(store):
            store = await store
        close = getattr(store, "close", None)
        if close is not None:
            await close()
    except AvoError as exc:
        raise ConfigError(
            f"cannot open the event store {location} for the trials: {exc}; pass -d LOCATION "
            "(a file path or a store URL)",
            key="database",
        ) from None


def select_cases(suite: Suite, patterns: Sequence[str] | None) -> list[tuple[int, Case]]:
    """The cases whose names match any of ``patterns`` (shell globs; all when none)."""
    chosen = [
        (index, case)
        for index, case in enumerate(suite.cases)
        if not patterns or any(fnmatch.fnmatchcase(case.name, p) for p in patterns)
    ]
    if not chosen:
        names = ", ".join(case.name for case in suite.cases)
        raise ConfigError(
            f"--case {' '.join(patterns or [])} matches no case of {suite.path}; cases: {names}",
            key="case",
        )
    return chosen


async def run_suite(
    suite: Suite,
    *,
    database: str | None = None,
    environ: Mapping[str, str] | None = None,
    trials: int | None = None,
    concurrency: int | None = None,
    cases: Sequence[str] | None = None,
    provider: str | None = None,
    model: str | None = None,
    trial_timeout: float | None = None,
    keep_workspaces: bool = False,
    progress: Progress | None = None,
    on_workspaces: Callable[[Path], None] | None = None,
) -> EvalResults:
    """Run ``suite`` and judge every trial.

    The runs land in ``database``, else the suite's ``[store] location``, else
    ``AVO_DATABASE_PATH``, else ``avo.db`` (the suite's store name and settings apply).
    """
    from avo.config import database_location

    env = dict(os.environ if environ is None else environ)
    functions = resolve_python_checks(suite)
    chosen = select_cases(suite, cases)
    store = suite.store.model_dump(exclude_none=True) if suite.store else {}
    store["location"] = _absolute_location(
        str(database or store.get("location") or database_location(env))
    )
    location = store["location"]
    await _prepare_store(store, env)
    eval_id = new_id()
    root = Path(tempfile.mkdtemp(prefix=f"avo-eval-{suite.label[:20]}-"))
    jobs: list[_Job] = []
    results: dict[str, CaseResult] = {}
    try:
        for index, case in chosen:
            case_env = {**env, **suite.env, **case.env}
            config = _override(case_config(suite, case), provider, model, store, case_env)
            _validate(suite, case, index, config, case_env)
            trial_env = {k: v for k, v in case_env.items() if k not in _RESOLVED_HERE}
            case_dir = root / f"{index:03d}-{case.name.replace(':', '_')}"
            case_dir.mkdir()
            config_path = case_dir / "avo.toml"
            config_path.write_text(_toml.dumps(config), encoding="utf-8")
            count = trials or case.trials or suite.trials
            results[case.name] = CaseResult(
                case.name,
                case.task,
                case.min_pass_rate if case.min_pass_rate is not None else suite.min_pass_rate,
            )
            for number in range(1, count + 1):
                directory = case_dir / f"trial-{number}"
                _write_fixtures(suite, case, directory / "workspace")
                limit = trial_timeout or case.timeout_seconds or suite.timeout_seconds
                jobs.append(_Job(case, number, directory, config_path, trial_env, limit))
        if progress is not None:
            progress.total = len(jobs)
        started = datetime.now(UTC)
        size = min(concurrency or suite.concurrency, len(jobs))
        pool = WorkerPool(size, env)
        tags = {"id": eval_id, "suite": suite.label}

        async def one(job: _Job) -> tuple[_Job, TrialResult]:
            data = await _run_trial(pool, job, location, tags)
            outcome = _outcome(job.case, job.trial, job.workspace, data)
            verdicts = await evaluate(job.case.checks, outcome, functions)
            trial = TrialResult(outcome, verdicts)
            if progress is not None:
                first = trial.failures()[0] if trial.failures() else None
                detail = f"{first.check}: {first.reason}" if first else ""
                progress.update(job.case.name, job.trial, trial.passed, detail)
            return job, trial

        try:
            finished = await asyncio.gather(*(one(job) for job in jobs))
        except BaseException:  # interrupted (Ctrl-C cancels us) or failed: stop the trials
            await asyncio.shield(pool.kill())
            raise
        await pool.close()
        for job, trial in sorted(finished, key=lambda item: (item[0].case.name, item[0].trial)):
            results[job.case.name].trials.append(trial)
    finally:
        if progress is not None:
            progress.close()
        if keep_workspaces:
            if on_workspaces is not None:
                on_workspaces(root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return EvalResults(
        suite=suite.label,
        suite_file=str(suite.path),
        eval_id=eval_id,
        store=location,
        started_at=started,
        finished_at=datetime.now(UTC),
        provider=provider,
        model=model,
        cases=[results[case.name] for _, case in chosen],
    )


__all__ = ["CaseResult", "EvalResults", "TrialResult", "run_suite", "select_cases"]
