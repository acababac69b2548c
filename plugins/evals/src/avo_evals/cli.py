"""``avo eval SUITE``: run a suite, print the summary, write the JSON and JUnit reports.

Exit codes: 0 when every case reached its pass rate (and, with ``--baseline``,
none regressed), 1 otherwise, 2 for bad input (the suite, the baseline, a
flag), printed as one ``avo: ...`` line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_OUTPUT = "eval-results.json"
DEFAULT_JUNIT = "eval-junit.xml"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be more than 0 seconds")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo eval``'s arguments."""
    parser.add_argument("suite", metavar="SUITE", type=Path, help="suite file (.toml, .yaml)")
    parser.add_argument(
        "-n", "--trials", type=_positive, default=None, metavar="N",
        help="runs per case (overrides the suite's and the cases' trials)",
    )  # fmt: skip
    parser.add_argument(
        "-j", "--concurrency", type=_positive, default=None, metavar="N",
        help="trials running at once (default: the suite's concurrency, 4)",
    )  # fmt: skip
    parser.add_argument(
        "-k", "--case", action="append", dest="cases", default=None, metavar="PATTERN",
        help="run only cases whose name matches this shell pattern; repeat for more",
    )  # fmt: skip
    parser.add_argument(
        "--provider", metavar="NAME", help="provider plugin for every case (compare models)"
    )
    parser.add_argument(
        "--model", metavar="MODEL", help="model for every case ([provider.settings] model)"
    )
    parser.add_argument(
        "--baseline", type=Path, default=None, metavar="RESULTS",
        help="an earlier results JSON: report regressions and improvements per case",
    )  # fmt: skip
    parser.add_argument(
        "-d", "--database", default=None, metavar="LOCATION",
        help="event store the trials record in (default: the suite's [store] location, "
        "AVO_DATABASE_PATH, then avo.db)",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", type=Path, default=Path(DEFAULT_OUTPUT), metavar="FILE",
        help=f"results JSON to write (default: {DEFAULT_OUTPUT})",
    )  # fmt: skip
    parser.add_argument(
        "--junit", type=Path, default=Path(DEFAULT_JUNIT), metavar="FILE",
        help=f"JUnit XML report to write (default: {DEFAULT_JUNIT})",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=_seconds, default=None, metavar="SECONDS",
        help="kill a trial after this long (default: the suite's timeout_seconds, 300)",
    )  # fmt: skip
    parser.add_argument(
        "--keep-workspaces", action="store_true",
        help="keep every trial's workspace, config and log, and print where",
    )  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--json", action="store_true", help="print the results as JSON instead of the summary"
    )


def _write(path: Path, text: str) -> None:
    from avo.exceptions import ConfigError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot write {path}: {exc.strerror or exc}; pass a writable path", key=str(path)
        ) from None


async def _main(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from avo_evals import report
    from avo_evals.compare import compare, load_baseline
    from avo_evals.compare import to_text as comparison_text
    from avo_evals.progress import Progress
    from avo_evals.runner import run_suite, select_cases
    from avo_evals.suite import load_suite

    suite = load_suite(args.suite)
    baseline = load_baseline(args.baseline) if args.baseline is not None else None
    selected = {case.name for _, case in select_cases(suite, args.cases)}
    progress = Progress(0, enabled=not args.no_progress, environ=dict(environ))

    def kept(root: Path) -> None:
        print(f"eval: workspaces kept in {root}", file=sys.stderr)

    results = await run_suite(
        suite,
        database=str(args.database) if args.database else None,
        environ=environ,
        trials=args.trials,
        concurrency=args.concurrency,
        cases=args.cases,
        provider=args.provider,
        model=args.model,
        trial_timeout=args.timeout,
        keep_workspaces=args.keep_workspaces,
        progress=progress,
        on_workspaces=kept,
    )
    data: dict[str, Any] = report.results_to_dict(results)
    comparison = None
    if baseline is not None:
        skipped = [case.name for case in suite.cases if case.name not in selected]
        comparison = compare(results, baseline, str(args.baseline), skipped=skipped)
        data["comparison"] = comparison.to_dict()
    _write(args.output, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    _write(args.junit, report.to_junit(results))
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(report.to_text(results))
        if comparison is not None:
            sys.stdout.write("\n" + comparison_text(comparison))
        print(f"reports: {args.output} (JSON), {args.junit} (JUnit)")
    regressed = comparison is not None and bool(comparison.regressions)
    return 0 if results.passed and not regressed else 1


def run(args: argparse.Namespace) -> int:
    """Run ``avo eval``; avo errors print ``avo: {message}`` and return 2."""
    from avo.exceptions import AvoError

    environ: Mapping[str, str] = getattr(args, "avo_environ", None) or os.environ
    try:
        return asyncio.run(_main(args, environ))
    except AvoError as exc:
        print(f"avo: {exc}", file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None) -> int:
    """``avo eval`` as a standalone entry point."""
    parser = argparse.ArgumentParser(prog="avo eval", description="run an eval suite")
    configure(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    args.avo_environ = environ
    return run(args)


__all__ = ["configure", "main", "run"]
