"""``avo completion bash|zsh|fish``: shell completion from the live parser.

The printed script asks ``avo`` itself for candidates (environment variable
``_AVO_COMPLETE``), so commands added by plugins complete too, and run ids
complete from the event store after ``runs inspect|resume|cancel|diff`` and
``replay``. Install with e.g. ``avo completion bash >> ~/.bashrc``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Mapping, Sequence

SCRIPTS = {
    "bash": """# avo completion for bash: eval "$(avo completion bash)"
_avo_complete() {
    local IFS=$'\\n'
    COMPREPLY=( $(_AVO_COMPLETE=1 _AVO_CWORD="$COMP_CWORD" avo "${COMP_WORDS[@]:1}" 2>/dev/null) )
}
complete -o default -F _avo_complete avo
""",
    "zsh": """# avo completion for zsh: eval "$(avo completion zsh)"
autoload -U +X bashcompinit && bashcompinit
_avo_complete() {
    local IFS=$'\\n'
    COMPREPLY=( $(_AVO_COMPLETE=1 _AVO_CWORD="$COMP_CWORD" avo "${COMP_WORDS[@]:1}" 2>/dev/null) )
}
complete -o default -F _avo_complete avo
""",
    "fish": """# avo completion for fish: avo completion fish | source
function __avo_complete
    set -l words (commandline -opc) (commandline -ct)
    env _AVO_COMPLETE=1 _AVO_CWORD=(math (count $words) - 1) avo $words[2..-1] 2>/dev/null
end
complete -c avo -f -a '(__avo_complete)'
""",
}

_RUN_ID_COMMANDS = {("runs", "inspect"), ("runs", "resume"), ("runs", "cancel"), ("runs", "diff")}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo completion``'s argument."""
    parser.add_argument("shell", choices=sorted(SCRIPTS), help="the shell to complete for")


def run(args: argparse.Namespace) -> int:
    """Print the completion script."""
    print(SCRIPTS[args.shell], end="")
    return 0


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(o for a in parser._actions for o in a.option_strings if o.startswith("--"))


async def _run_ids(environ: Mapping[str, str], words: Sequence[str]) -> list[str]:
    from avo.cli._context import open_store

    ns = argparse.Namespace(config=None, database=None, avo_environ=environ, avo_plugins=None)
    for index, word in enumerate(words[:-1]):
        if word in ("-d", "--database"):
            ns.database = words[index + 1]
    store, _ = await open_store(ns)
    try:
        return [run.run_id for run in await store.list_runs()]
    finally:
        await store.close()


def candidates(words: list[str], environ: Mapping[str, str]) -> list[str]:
    """Completions for the last word of ``words`` (the words after ``avo``)."""
    from avo.cli._app import _invoked_command, build_parser
    from avo.plugins.manager import PluginManager

    current = words[-1] if words else ""
    before = words[:-1]
    manager = PluginManager(environ=environ)
    invoked = _invoked_command(before)
    if invoked is not None and invoked not in manager.names("command"):
        return []
    parser, _ = build_parser(manager, invoked, describe_all=False)
    path: list[str] = []
    for word in before:
        sub = _subparsers(parser).get(word)
        if sub is not None:
            parser = sub
            path.append(word)
    if current.startswith("-"):
        pool = _options(parser)
    else:
        pool = sorted(_subparsers(parser))
        if tuple(path[-2:]) in _RUN_ID_COMMANDS or path[-1:] == ["replay"]:
            with contextlib.suppress(Exception):  # no store here: nothing to offer
                pool += asyncio.run(_run_ids(environ, words))
    return [item for item in pool if item.startswith(current)]


def complete(environ: Mapping[str, str], argv: list[str]) -> int:
    """Print candidates one per line (``_AVO_COMPLETE`` mode of ``avo``)."""
    try:
        cword = int(environ.get("_AVO_CWORD", str(len(argv))))
    except ValueError:
        cword = len(argv)
    words = list(argv[: max(cword, 1)])
    if len(words) < cword:
        words.append("")
    for item in candidates(words or [""], environ):
        print(item)
    return 0


__all__ = ["SCRIPTS", "candidates", "complete", "configure", "run"]
