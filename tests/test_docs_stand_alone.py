"""The docs and the code's comments stand alone: only docs/reference-map.md cites the reference."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "\u00a7"  # the section sign, spelled out so this file does not cite anything
SUFFIXES = (".py", ".md", ".toml", ".sh", ".cfg", ".txt", ".yml", ".yaml", ".rs")


def test_no_section_citations_outside_the_reference_map() -> None:
    listed = subprocess.run(
        ["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    files = (
        [ROOT / name for name in listed.stdout.splitlines()]
        if listed.returncode == 0
        else [p for p in ROOT.rglob("*") if ".nox" not in p.parts and ".git" not in p.parts]
    )
    citing = [
        str(path.relative_to(ROOT))
        for path in files
        if path.suffix in SUFFIXES
        and path.is_file()
        and path.name != "reference-map.md"
        and SECTION in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert citing == [], f"these cite reference sections; say it in our own words: {citing}"
