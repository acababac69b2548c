"""Entry points: the ``chat`` and ``resume`` commands and the built-in slash commands.

Importing this module is cheap: every command's code is imported when it runs
(``lazy_command`` / ``lazy_slash_command``). The built-in slash commands are
registered exactly like a third party's: through the ``avo.slash_commands``
entry points this package declares (one per name).
"""

from __future__ import annotations

from avo.plugins import lazy_command, lazy_slash_command, provides

chat_command = provides(
    lazy_command(
        "chat",
        "avo_chat.cli",
        help="chat with the agent in this workspace (a session of runs; bare avo starts it)",
        configure="configure_chat",
        run="run_chat",
        interactive_default=True,
    )
)

resume_command = provides(
    lazy_command(
        "resume",
        "avo_chat.cli",
        help="reopen the latest chat session (or SESSION) and continue an interrupted turn",
        configure="configure_resume",
        run="run_resume",
    )
)

_SESSION = "avo_chat.commands.session"
_INFO = "avo_chat.commands.info"
_SETUP = "avo_chat.commands.setup"
_WORK = "avo_chat.commands.workspace"
_RUNS = "avo_chat.commands.runs"

# name, module, function, help, usage, aliases, while_busy
_BUILTINS: tuple[tuple[str, str, str, str, str, tuple[str, ...], bool], ...] = (
    ("help", _INFO, "help", "list every command and the package it comes from", "", (), True),
    ("quit", _INFO, "quit", "leave the chat (Ctrl-D)", "", ("exit",), True),
    ("new", _SESSION, "new", "start a new session", "[TITLE]", (), False),
    ("sessions", _SESSION, "sessions_", "list the sessions in this store", "", (), True),
    ("session", _SESSION, "session", "this session: id, title, turns, model", "", (), True),
    ("resume", _SESSION, "resume", "switch to another session", "[SESSION]", (), False),
    ("branch", _SESSION, "branch", "fork this session at a turn", "[TURN]", ("fork",), False),
    ("undo", _SESSION, "undo", "restore the files the last turn changed, drop it", "", (), False),
    ("clear", _SESSION, "clear", "start the next turn with no context", "", (), False),
    (
        "compact",
        _SESSION,
        "compact",
        "summarise the conversation to save context",
        "[N]",
        (),
        False,
    ),
    (
        "history",
        _SESSION,
        "history",
        "search what you typed in this workspace",
        "[QUERY]",
        (),
        True,
    ),
    ("export", _SESSION, "export", "write this session as Markdown", "[PATH]", (), True),
    ("draft", _SESSION, "draft", "keep a prompt for later", "[show|save TEXT|clear]", (), True),
    ("cost", _INFO, "cost", "tokens and cost of this session", "", (), True),
    ("context", _INFO, "context", "how full the model's context window is", "", (), True),
    ("model", _SETUP, "model", "show or switch the model for the next turn", "[NAME]", (), False),
    ("provider", _SETUP, "provider", "show or switch the provider", "[NAME [MODEL]]", (), False),
    ("tools", _INFO, "tools", "the tools the agent can call, with their risk", "", (), True),
    (
        "permissions",
        _SETUP,
        "permissions",
        "show or switch the permission mode; forget the always answers",
        "[MODE|forget]",
        (),
        False,
    ),
    ("instructions", _SETUP, "instructions", "show or add instructions", "[TEXT|clear]", (), False),
    ("skills", _INFO, "skills", "the skills available in this workspace", "", (), True),
    ("skill", _INFO, "skill", "attach a skill to your next message", "NAME", (), False),
    ("mcp", _INFO, "mcp", "MCP servers and the tools they give", "", (), True),
    ("plugin", _INFO, "plugin", "installed plugins and problems", "[KIND]", ("plugins",), True),
    ("inspect", _RUNS, "inspect", "a run's trace (default: the last turn)", "[RUN]", (), True),
    ("replay", _RUNS, "replay", "re-drive a run offline and compare", "[RUN]", (), False),
    ("jobs", _RUNS, "jobs", "runs that are working, interrupted or waiting", "", (), True),
    ("job", _RUNS, "job", "one run: state, steps, what it waits for", "[RUN]", (), True),
    ("cancel", _RUNS, "cancel", "end a run for good (not this turn: Ctrl-C)", "RUN", (), False),
    ("diff", _WORK, "diff", "what changed in the workspace (git)", "[PATH]", (), True),
    ("commit", _WORK, "commit", "commit every change (git)", "[MESSAGE]", (), False),
    ("stash", _WORK, "stash", "git stash (push, pop, list, show)", "[ARGS]", (), False),
    ("log", _WORK, "log", "recent commits (git)", "[N]", (), True),
    ("shell", _WORK, "shell", "run a command in the sandbox (also !CMD)", "CMD", (), False),
    (
        "test",
        _WORK,
        "test",
        "run the tests; output goes to your next message",
        "[TARGET]",
        (),
        False,
    ),
    (
        "lint",
        _WORK,
        "lint",
        "run the linter; output goes to your next message",
        "[PATH]",
        (),
        False,
    ),
    ("grep", _WORK, "grep", "search file contents", "PATTERN [GLOB]", (), True),
    ("find", _WORK, "find", "find files by name", "[GLOB]", ("search",), True),
    ("map", _WORK, "map_", "the workspace's layout", "[DEPTH]", ("tree",), True),
    ("symbols", _WORK, "symbols", "functions and classes in a file", "PATH", (), True),
)

builtin = provides(
    *(
        lazy_slash_command(
            name, module, function, help=text, usage=usage, aliases=aliases, while_busy=busy
        )
        for name, module, function, text, usage, aliases, busy in _BUILTINS
    )
)

__all__ = ["builtin", "chat_command", "resume_command"]
