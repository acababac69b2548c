"""Write docs/hooks.md from the hookspec docstrings and avo.hooks (the source of truth).

``python scripts/gen_hook_docs.py`` rewrites the file;
``python scripts/gen_hook_docs.py --check`` exits 1 when it is out of date
(kernel/tests/test_plugins_hook_docs.py runs the same comparison).
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "docs" / "hooks.md"


def render() -> str:
    """The hook reference as Markdown, in hookspecs' definition order."""
    from avo import hookspecs

    lines = [
        "# Hook reference",
        "",
        "<!-- Generated from kernel/src/avo/hookspecs.py by scripts/gen_hook_docs.py;",
        "     edit the docstrings there, then rerun the script. -->",
        "",
        inspect.cleandoc(hookspecs.__doc__ or ""),
        "",
    ]
    functions = [
        (name, value)
        for name, value in vars(hookspecs).items()
        if name.startswith("avo_") and inspect.isfunction(value)
    ]
    for name, function in functions:
        signature = str(inspect.signature(function)).replace("'", "")
        lines += [f"## `{name}{signature}`", "", inspect.cleandoc(function.__doc__ or ""), ""]
    from avo import hooks

    lines += [
        "# Run hooks",
        "",
        "<!-- Generated from the docstring of kernel/src/avo/hooks.py. -->",
        "",
        inspect.cleandoc(hooks.__doc__ or ""),
        "",
    ]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is out of date: run python scripts/gen_hook_docs.py")
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
