"""Entry points: the ``skill`` and ``init`` commands (cheap to import)."""

from __future__ import annotations

from typing import Any

from avo.plugins import CommandSpec, provides


def _configure_skill(parser: Any) -> None:
    from avo_skills.cli import configure_skill

    configure_skill(parser)


def _run_skill(args: Any) -> int:
    from avo_skills.cli import run_skill

    return run_skill(args)


def _configure_init(parser: Any) -> None:
    from avo_skills.cli import configure_init

    configure_init(parser)


def _run_init(args: Any) -> int:
    from avo_skills.cli import run_init

    return run_init(args)


skill_command = provides(
    CommandSpec(
        name="skill",
        configure=_configure_skill,
        run=_run_skill,
        help="install, list, show or remove skills (.avo/skills)",
    )
)
init_command = provides(
    CommandSpec(
        name="init",
        configure=_configure_init,
        run=_run_init,
        help="scaffold .avo/skills/repo-overview/SKILL.md and AGENTS.md",
    )
)
