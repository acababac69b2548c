"""Shell command lines as permission rules see them.

A command line is split into simple commands at ``;``, ``&&``, ``||``, ``|``,
``&``, newlines and parentheses. Each simple command loses its leading
``NAME=value`` assignments and wrapper programs (``sudo``, ``env``,
``command``, ``exec``, ``nohup``, ``time``, ``nice``, ``timeout``,
``stdbuf``, ``xargs``), and ``sh -c STRING`` / ``bash -c STRING`` / ``eval``
are analysed recursively. A prefix rule (``git push``) matches a simple
command whose words start with the prefix's words (each may be a glob).

Deny and ask rules match when **any** simple command matches (and the program
is also compared by its base name, so ``/bin/rm`` is ``rm``). Allow rules match
only when **every** simple command matches an allowed prefix exactly and the
line holds nothing that cannot be read statically: command substitution
(``$(...)``, backquotes, ``<(...)``), or a redirection to a file other than
``/dev/null``.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", "\n", "(", ")", ";;", ";&"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset(
    {"sudo", "env", "command", "builtin", "exec", "nohup", "time", "nice", "timeout"}
    | {"stdbuf", "xargs", "doas"}
)
_WRAPPER_VALUE_OPTIONS = {
    "sudo": {"-u", "-g", "-C", "-h", "-p", "-U"},
    "env": {"-u", "-C", "-S"},
    "nice": {"-n"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "xargs": {"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"},
    "stdbuf": {"-i", "-o", "-e"},
}
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "fish"})
_SUBSTITUTION = ("$(", "`", "<(", ">(")
_REDIRECT = re.compile(r"^[0-9]*(?:<<<|<<-|<<|<>|<&|<|>>|>&|>\||>|&>>|&>)$")
_MAX_DEPTH = 4


@dataclass
class ParsedCommand:
    """A command line split into simple commands (lists of words)."""

    commands: list[list[str]] = field(default_factory=list)
    # Words that name files: redirection targets and non-option arguments.
    file_words: list[str] = field(default_factory=list)
    # False when the line cannot be fully read statically (see the module docstring).
    analyzable: bool = True


def _lex(text: str) -> list[str] | None:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>()\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote or escape
        return None


def _strip_wrappers(words: list[str]) -> list[str]:
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word):
            index += 1
            continue
        name = os.path.basename(word)
        if name not in _WRAPPERS:
            break
        index += 1
        value_options = _WRAPPER_VALUE_OPTIONS.get(name, set())
        while index < len(words):
            option = words[index]
            if option == "--":
                index += 1
                break
            if name == "env" and _ASSIGNMENT.match(option):
                index += 1
                continue
            if not option.startswith("-") or option == "-":
                break
            index += 2 if option in value_options else 1
        if name == "timeout" and index < len(words):
            index += 1  # the duration
    return words[index:]


def parse_command(text: str, *, _depth: int = 0) -> ParsedCommand:
    """Split ``text`` into simple commands (see the module docstring)."""
    parsed = ParsedCommand()
    if any(marker in text for marker in _SUBSTITUTION):
        parsed.analyzable = False
        # Read what is inside substitutions as commands of their own (for deny).
        text = text.replace("`", " ; ").replace("$(", " ; (")
    words = _lex(text)
    if words is None:
        parsed.analyzable = False
        words = text.split()
    current: list[str] = []
    pending_redirect = False
    for word in [*words, ";"]:
        if pending_redirect:
            pending_redirect = False
            if not (word.isdigit() or word == "-"):
                parsed.file_words.append(word)
                if word != "/dev/null":
                    parsed.analyzable = False
            continue
        if word in _SEPARATORS:
            if current:
                _add(parsed, current, _depth)
            current = []
            continue
        if _REDIRECT.match(word):
            pending_redirect = True
            continue
        current.append(word)
    return parsed


def _add(parsed: ParsedCommand, words: list[str], depth: int) -> None:
    simple = _strip_wrappers(words)
    if not simple:
        return
    program = os.path.basename(simple[0])
    inner: str | None = None
    if program in _SHELLS and "-c" in simple[1:]:
        position = simple.index("-c", 1)
        inner = simple[position + 1] if position + 1 < len(simple) else ""
    elif program == "eval":
        inner = " ".join(simple[1:])
    if inner is not None and depth < _MAX_DEPTH:
        nested = parse_command(inner, _depth=depth + 1)
        parsed.commands.append(simple)  # the shell itself, so `deny bash` still matches
        parsed.commands.extend(nested.commands)
        parsed.file_words.extend(nested.file_words)
        parsed.analyzable = parsed.analyzable and nested.analyzable
        return
    if inner is not None:
        parsed.analyzable = False
    parsed.commands.append(simple)
    for word in simple[1:]:
        if word.startswith("-"):
            _, sep, value = word.partition("=")
            if sep and value:
                parsed.file_words.append(value)
            continue
        parsed.file_words.append(word)


def _prefix_words(prefix: str) -> list[str]:
    try:
        return shlex.split(prefix)
    except ValueError:
        return prefix.split()


def prefix_matches(prefix: str, words: list[str], *, by_basename: bool) -> bool:
    """True when the simple command ``words`` starts with ``prefix``'s words."""
    wanted = _prefix_words(prefix)
    if not wanted or len(words) < len(wanted):
        return False
    for index, pattern in enumerate(wanted):
        word = words[index]
        if fnmatchcase(word, pattern):
            continue
        if index == 0 and by_basename and fnmatchcase(os.path.basename(word), pattern):
            continue
        return False
    return True


__all__ = ["ParsedCommand", "parse_command", "prefix_matches"]
