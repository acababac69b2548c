"""``avo skill install|list|show|remove`` and ``avo init``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from avo.exceptions import AvoError
from avo_skills.registry import DEFAULT_ROOT, SKILL_FILE, SkillRegistry

REPO_OVERVIEW = """---
name: repo-overview
description: Orient yourself in this repository before changing it.
---
# Repository overview

1. Read `AGENTS.md` at the repository root for the project's conventions.
2. Map the workspace (`workspace_map`) and list the main modules (`symbols`).
3. Find the tests (`glob` for `tests/**/*.py`) and run them (`test_runner`) before editing.
4. Summarise what the project does, where its entry points are, and how it is tested.
"""

AGENTS_MD = """# AGENTS.md

Instructions for coding agents working in this repository.

## Setup
- Describe how to install dependencies here.

## Tests
- Describe how to run the tests here (e.g. `python -m pytest -q`).

## Conventions
- Keep changes small and covered by tests.
- Skills for this repository live in `.avo/skills/` (`avo skill list`).
"""


AVO_TOML = """# avo.toml, written by `avo init` (see docs/configuration.md and docs/context.md).
# The provider and model come from `avo setup` (your user config) unless set here:
# [provider]
# name = "anthropic"

# Keep every request inside the model's context window: old tool output is elided
# (the model can recall it by id) and old turns are summarised.
[context]
# window = 200000           # default: the provider's catalog for the model
# threshold = 0.75          # compact above this share of the window
# keep_recent_turns = 4     # the newest turns always stay verbatim

# Show AGENTS.md (here and in the parent directories) to the model.
[instructions]

# List the skills of .avo/skills to the model; it loads one when it needs it.
[skills]

# Start MCP servers with each run: those of ~/.avo/mcp.json (`avo mcp add`) and these.
[mcp]
# [mcp.servers.time]
# command = ["uvx", "mcp-server-time"]
"""


def configure_skill(parser: argparse.ArgumentParser) -> None:
    """``avo skill`` subcommands."""
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="skills directory")
    sub = parser.add_subparsers(dest="skill_command", required=True)
    install = sub.add_parser("install", help="install a skill from a .md file or directory")
    install.add_argument("source", type=Path)
    install.add_argument("--name", default=None)
    install.add_argument("--force", action="store_true")
    listing = sub.add_parser("list", help="list installed skills")
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = sub.add_parser("show", help="print a skill")
    show.add_argument("name")
    remove = sub.add_parser("remove", help="remove a skill")
    remove.add_argument("name")
    remove.add_argument("--yes", "-y", action="store_true", help="do not ask to confirm")


def run_skill(
    args: argparse.Namespace,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Execute ``avo skill ...``; ``avo: {error}`` and exit 2 on AvoError."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    registry = SkillRegistry(args.root)
    try:
        if args.skill_command == "install":
            skill = registry.install(args.source, name=args.name, force=args.force)
            print(f"installed skill {skill.name} -> {skill.path}", file=out)
        elif args.skill_command == "list" and getattr(args, "json", False):
            import json

            rows = [
                {"name": s.name, "description": s.description, "path": str(s.path)}
                for s in registry
            ]
            print(json.dumps(rows, indent=2), file=out)
        elif args.skill_command == "list":
            names = registry.names()
            if not names:
                print(f"no skills in {registry.root}", file=out)
            for skill in registry:
                print(f"{skill.name}\t{skill.description}".rstrip(), file=out)
        elif args.skill_command == "show":
            out.write(registry.get(args.name).body)
        elif args.skill_command == "remove":
            if not registry.exists(args.name):
                registry.remove(args.name)  # raises the "no skill named" error
            if not args.yes:
                out.write(f"Remove skill {args.name}? [y/N]: ")
                out.flush()
                if (stdin or sys.stdin).readline().strip().lower() not in {"y", "yes"}:
                    print("aborted", file=out)
                    return 1
            registry.remove(args.name)
            print(f"removed skill {args.name}", file=out)
    except AvoError as exc:
        print(f"avo: {exc}", file=err)
        return 2
    return 0


def configure_init(parser: argparse.ArgumentParser) -> None:
    """``avo init`` flags."""
    parser.add_argument("--root", type=Path, default=Path("."), help="repository root")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")


def run_init(args: argparse.Namespace, *, stdout: TextIO | None = None) -> int:
    """Scaffold ``.avo/skills/repo-overview/SKILL.md``, ``AGENTS.md`` and an ``avo.toml``.

    The avo.toml enables what the other two are for: AGENTS.md as instructions,
    the skills list, context compaction and MCP servers.
    """
    out = stdout or sys.stdout
    root = Path(args.root)
    files = {
        root / DEFAULT_ROOT / "repo-overview" / SKILL_FILE: REPO_OVERVIEW,
        root / "AGENTS.md": AGENTS_MD,
        root / "avo.toml": AVO_TOML,
    }
    for path, text in files.items():
        if path.exists() and not args.force:
            print(f"kept {path} (exists; --force to overwrite)", file=out)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"created {path}", file=out)
    return 0


__all__ = [
    "AGENTS_MD",
    "AVO_TOML",
    "REPO_OVERVIEW",
    "configure_init",
    "configure_skill",
    "run_init",
    "run_skill",
]
