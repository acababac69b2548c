"""Read-only commands: /help, /quit, /cost, /context, /tools, /skills, /skill, /mcp, /plugin."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from avo.exceptions import AvoError
from avo_chat.usage import money

if TYPE_CHECKING:
    from avo_chat.slash import ChatContext


def _table(chat: ChatContext, title: str, columns: list[str], rows: list[list[str]]) -> None:
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=None, pad_edge=False, show_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    chat.show(table)


def help(chat: ChatContext, argument: str) -> None:
    """Every command with its usage, what it does and the package it comes from."""
    registry = chat.chat.commands
    assert registry is not None
    rows = []
    for name in sorted(registry.commands):
        info = registry.commands[name]
        if info.problem is not None:
            rows.append([f"/{name}", "", f"broken: {info.problem}", info.package])
            continue
        spec = info.spec
        aliases = ", ".join("/" + a for a, target in registry.aliases.items() if target == name)
        text = spec.help + (f" (also {aliases})" if aliases else "")
        rows.append([f"/{name}", spec.usage, text, info.package])
    _table(chat, "Commands", ["command", "arguments", "what it does", "package"], rows)
    chat.print(
        "!CMD runs a command in the sandbox · @path attaches a file or folder · "
        "Enter sends, Alt-Enter adds a line · Ctrl-C interrupts a turn · Ctrl-D leaves",
        style="dim",
    )


def quit(chat: ChatContext, argument: str) -> None:
    """Leave (an interrupted turn stays resumable with avo resume)."""
    chat.chat.quitting = True


async def cost(chat: ChatContext, argument: str) -> None:
    """Tokens and dollars of this session, by model, from its runs' events."""
    core = chat.chat
    usage = core.usage
    if not usage.models:
        chat.print("no model calls in this session yet (0 tokens, $0)")
        return
    assert core._pricer is not None
    total = usage.price(core._pricer)
    rows = []
    for entry in usage.models.values():
        rows.append(
            [
                f"{entry.provider}/{entry.model}",
                str(entry.calls),
                f"{entry.usage.input_tokens:,}",
                f"{entry.usage.output_tokens:,}",
                money(entry.cost) if entry.priced else "no price",
            ]
        )
    overall = usage.total
    rows.append(
        [
            "total",
            str(sum(e.calls for e in usage.models.values())),
            f"{overall.input_tokens:,}",
            f"{overall.output_tokens:,}",
            money(total, usage.partial),
        ]
    )
    turns = len(usage.runs)
    _table(
        chat,
        f"Session {str(chat.session_id)[:8]}: {turns} turn{'s' if turns != 1 else ''}",
        ["model", "calls", "input", "output", "cost"],
        rows,
    )
    if usage.partial:
        chat.print(
            "some models have no known price: set [budget] input_per_1k / output_per_1k in "
            "avo.toml or AVO_USAGE_RATES_INPUT_PER_1K / _OUTPUT_PER_1K",
            style="dim",
        )


async def context(chat: ChatContext, argument: str) -> None:
    """The window, what the last call used, and what the next turn starts from."""
    from avo_chat.sessions import session_store

    core = chat.chat
    window = core.runtime.context_window
    size = getattr(window, "tokens", None)
    record = await session_store(core).get_session(chat.session_id) if chat.session_id else None
    transcript = record.transcript if record is not None else []
    chars = sum(len(str(m.get("content") or "")) for m in transcript)
    roles: dict[str, int] = {}
    for message in transcript:
        roles[str(message.get("role"))] = roles.get(str(message.get("role")), 0) + 1
    lines = [
        f"model: {core.model_label()}",
        f"window: {f'{size:,} tokens' if size else 'unknown'}"
        + (f" ({getattr(window, 'source', '')})" if getattr(window, "source", "") else ""),
        f"last call used: {core.usage.last_input:,} input tokens"
        + (f" ({core.context_text()})" if size and core.usage.last_input else ""),
        f"next turn starts from {len(transcript)} messages (~{chars // 4:,} tokens): "
        + ", ".join(f"{n} {role}" for role, n in sorted(roles.items())),
        "/compact summarises it; /clear starts the next turn with no context",
    ]
    chat.print("\n".join(lines))


def tools(chat: ChatContext, argument: str) -> None:
    """The runtime's tools with their risk."""
    rows = []
    for metadata in chat.runtime.tools.metadata:
        risk = str(metadata.effective_risk)
        rows.append([metadata.name, risk, metadata.description.splitlines()[0][:80]])
    if not rows:
        chat.print("no tools: add some to tools = [...] in avo.toml (avo plugin list shows them)")
        return
    _table(chat, "Tools", ["tool", "risk", "what it does"], rows)


def _skill_dirs(chat: ChatContext) -> list[Path]:
    home = chat.environ.get("HOME")
    dirs = [chat.workspace / ".avo" / "skills"]
    if home and Path(home).resolve() != chat.workspace:
        dirs.append(Path(home) / ".avo" / "skills")
    return dirs


def _skills(chat: ChatContext) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for directory in _skill_dirs(chat):
        if directory.is_dir():
            for entry in sorted(directory.iterdir()):
                if (entry / "SKILL.md").is_file():
                    found.setdefault(entry.name, entry / "SKILL.md")
    return found


def _description(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    for line in text.splitlines():
        if line.lower().startswith("description:"):
            return line.split(":", 1)[1].strip()
    return ""


def skills(chat: ChatContext, argument: str) -> None:
    """Skills in .avo/skills of the workspace and of your home directory."""
    found = _skills(chat)
    if not found:
        where = " or ".join(str(d) for d in _skill_dirs(chat))
        chat.print(f"no skills in {where} (avo skill install adds one)")
        return
    _table(
        chat,
        "Skills",
        ["skill", "what it is for"],
        [[n, _description(p)] for n, p in found.items()],
    )


def skill(chat: ChatContext, argument: str) -> None:
    """Attach skill NAME's instructions to your next message."""
    found = _skills(chat)
    if not argument:
        raise AvoError("/skill needs a NAME; /skills lists them")
    if argument not in found:
        known = ", ".join(found) or "none"
        raise AvoError(f"no skill {argument!r} (skills: {known})")
    chat.attach(f"skill {argument}", found[argument].read_text(encoding="utf-8"))
    chat.print(f"skill {argument} attached to your next message", style="dim")


async def mcp(chat: ChatContext, argument: str) -> None:
    """MCP servers from [mcp] and the tools the last turn got from them."""
    table = chat.config.mcp if hasattr(chat.config, "mcp") else None
    servers = (table or {}).get("servers") if isinstance(table, dict) else None
    lines = []
    if isinstance(servers, dict) and servers:
        for name, entry in servers.items():
            what = entry.get("command") or entry.get("url") if isinstance(entry, dict) else entry
            lines.append(f"{name}: {what}")
    else:
        lines.append("no [mcp] servers in avo.toml (avo mcp add NAME COMMAND adds one)")
    bundles = await _last_bundles(chat)
    for bundle in bundles:
        tools = bundle.get("tools") if isinstance(bundle, dict) else None
        if tools:
            lines.append(f"{bundle.get('name')}: {', '.join(map(str, tools))}")
        problems = bundle.get("problems") if isinstance(bundle, dict) else None
        if problems:
            lines.append(f"{bundle.get('name')} problems: {problems}")
    chat.print("\n".join(lines))


async def _last_bundles(chat: ChatContext) -> list[Any]:
    from avo_chat.sessions import session_store

    if chat.session_id is None:
        return []
    record = await session_store(chat.chat).get_session(chat.session_id)
    if record is None or not record.run_ids:
        return []
    events = await chat.store.get_events(record.run_ids[-1])
    bundles = events[0].payload.get("bundles") if events else None
    return list(bundles) if isinstance(bundles, list) else []


def plugin(chat: ChatContext, argument: str) -> None:
    """Installed plugins by kind (``/plugin tool``), and the ones that failed to load."""
    from avo.plugins import GROUP_OF_KIND

    manager = chat.manager
    kinds = [argument] if argument else sorted(GROUP_OF_KIND)
    rows = []
    for kind in kinds:
        if kind not in GROUP_OF_KIND:
            raise AvoError(f"no plugin kind {kind!r}; kinds: {', '.join(sorted(GROUP_OF_KIND))}")
        for name in manager.names(kind):
            rows.append([kind, name])
    _table(chat, "Plugins", ["kind", "name"], rows)
    for problem in manager.problems:
        chat.print(f"problem: {problem}", style="warn")


__all__ = ["context", "cost", "help", "mcp", "plugin", "quit", "skill", "skills", "tools"]
