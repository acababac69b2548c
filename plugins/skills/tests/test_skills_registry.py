"""SkillRegistry, load_skills, `avo skill ...` and `avo init`."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from avo.exceptions import AvoError, SkillError, ToolExecutionError
from avo_skills import SkillRegistry, load_skills, parse_skill
from avo_skills.cli import configure_init, configure_skill, run_init, run_skill
from avo_skills.plugin import init_command, skill_command


def test_skill_error_is_the_reference_alias() -> None:
    assert SkillError is ToolExecutionError and issubclass(SkillError, AvoError)


def test_registry_both_layouts_and_front_matter(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    (root / "deploy").mkdir(parents=True)
    (root / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Ship it\n---\nSteps\n"
    )
    (root / "style.md").write_text("Use ruff.\n")
    (root / "Bad Name.md").write_text("ignored")
    (root / "notes.txt").write_text("ignored")
    registry = SkillRegistry(root)
    assert registry.root == root
    assert registry.names() == ["deploy", "style"]
    assert registry.exists("deploy") and not registry.exists("missing")
    assert registry.load("deploy") == "Steps\n"
    assert registry.get("deploy").description == "Ship it"
    assert registry.load("style") == "Use ruff.\n"
    assert [s.name for s in registry] == ["deploy", "style"]
    with pytest.raises(SkillError, match=r"no skill named 'missing'.*available: deploy, style"):
        registry.load("missing")


@pytest.mark.parametrize("name", ["../etc", "Upper", "-x", "a/b", "", "x" * 65, "a b", "..", "é"])
def test_invalid_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(SkillError, match="invalid skill name"):
        SkillRegistry(tmp_path).load(name)


def test_symlinked_skill_is_not_loaded(tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    root = tmp_path / "skills"
    root.mkdir()
    (root / "leak.md").symlink_to(secret)
    assert SkillRegistry(root).names() == []


def test_load_skills_creates_the_directory(tmp_path: Path) -> None:
    root = tmp_path / "a" / "skills"
    assert load_skills(root) == {}
    assert root.is_dir()
    (root / "x.md").write_text("body")
    assert load_skills(root) == {"x": "body"}


def test_parse_skill_without_front_matter() -> None:
    assert parse_skill("plain") == ({}, "plain")
    assert parse_skill("---\nunterminated") == ({}, "---\nunterminated")


def _skill(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="avo skill")
    configure_skill(parser)
    out, err = io.StringIO(), io.StringIO()
    code = run_skill(parser.parse_args(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_cli_install_list_show_remove(tmp_path: Path) -> None:
    root = str(tmp_path / "skills")
    source = tmp_path / "review.md"
    source.write_text("---\ndescription: Review a diff\n---\nLook for bugs.\n")
    assert _skill(["--root", root, "list"])[1] == f"no skills in {root}\n"
    code, out, _ = _skill(["--root", root, "install", str(source)])
    assert code == 0 and out.startswith("installed skill review")
    code, _, err = _skill(["--root", root, "install", str(source)])
    assert code == 2 and "already installed; pass --force" in err
    assert _skill(["--root", root, "install", str(source), "--force"])[0] == 0
    folder = tmp_path / "src-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text("Folder skill\n")
    assert _skill(["--root", root, "install", str(folder), "--name", "folder"])[0] == 0
    assert _skill(["--root", root, "list"])[1] == "folder\nreview\tReview a diff\n"
    assert _skill(["--root", root, "show", "review"])[1] == "Look for bugs.\n"
    code, out, _ = _skill(["--root", root, "remove", "review"], stdin="n\n")
    assert code == 1 and "aborted" in out
    code, out, _ = _skill(["--root", root, "remove", "review"], stdin="y\n")
    assert code == 0 and "removed skill review" in out
    assert _skill(["--root", root, "remove", "folder", "-y"])[0] == 0
    code, _, err = _skill(["--root", root, "show", "review"])
    assert code == 2 and err.startswith("avo: no skill named 'review'")
    code, _, err = _skill(["--root", root, "install", str(source), "--name", "../evil"])
    assert code == 2 and "invalid skill name" in err
    assert not (tmp_path / "evil").exists()


def test_avo_init_scaffolds_and_keeps_existing(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="avo init")
    configure_init(parser)
    out = io.StringIO()
    assert run_init(parser.parse_args(["--root", str(tmp_path)]), stdout=out) == 0
    skill = tmp_path / ".avo" / "skills" / "repo-overview" / "SKILL.md"
    assert skill.is_file() and (tmp_path / "AGENTS.md").is_file()
    registry = SkillRegistry(tmp_path / ".avo" / "skills")
    assert registry.names() == ["repo-overview"]
    assert "Repository overview" in registry.load("repo-overview")
    (tmp_path / "AGENTS.md").write_text("mine")
    out = io.StringIO()
    run_init(parser.parse_args(["--root", str(tmp_path)]), stdout=out)
    assert (tmp_path / "AGENTS.md").read_text() == "mine" and "kept" in out.getvalue()


def test_command_specs() -> None:
    (skill,) = skill_command.specs
    (init,) = init_command.specs
    assert (skill.name, init.name) == ("skill", "init")
    parser = argparse.ArgumentParser()
    skill.configure(parser)
    assert parser.parse_args(["list"]).skill_command == "list"


def test_through_the_avo_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from avo.cli import main

    assert main(["init", "--root", str(tmp_path)], environ={}) == 0
    root = str(tmp_path / ".avo" / "skills")
    capsys.readouterr()
    assert main(["skill", "--root", root, "list"], environ={}) == 0
    assert capsys.readouterr().out.startswith("repo-overview\t")
    assert main(["skill", "--root", root, "show", "nope"], environ={}) == 2
