"""Entry points: the ``skill`` and ``init`` commands (cheap to import)."""

from __future__ import annotations

from avo.plugins import lazy_command, provides

skill_command = provides(
    lazy_command(
        "skill",
        "avo_skills.cli",
        help="install, list, show or remove skills (.avo/skills)",
        configure="configure_skill",
        run="run_skill",
    )
)
init_command = provides(
    lazy_command(
        "init",
        "avo_skills.cli",
        help="scaffold .avo/skills/repo-overview/SKILL.md, AGENTS.md and an avo.toml using them",
        configure="configure_init",
        run="run_init",
    )
)
