"""Fail if ``import avo`` (the kernel alone) pulls in anything optional.

Run in a venv where only ``avo-kernel`` is installed (nox -s kernel_only).
"""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
before = set(sys.modules)
import avo
import avo.plugins
loaded = sorted(set(sys.modules) - before)
print("\\n".join(loaded))
"""

FORBIDDEN_PREFIXES = (
    "httpx",
    "docker",
    "anthropic",
    "openai",
    "mcp",
    "asyncpg",
    "opentelemetry",
    "langchain",
    "avo_",
)


def main() -> int:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    )
    loaded = result.stdout.split()
    bad = [m for m in loaded if m.startswith(FORBIDDEN_PREFIXES)]
    plugin_code = [m for m in loaded if m in ("avo._builtins",) or m.startswith("avo.cli.")]
    if bad or plugin_code:
        print("import avo pulled in optional or plugin modules:", *bad, *plugin_code, sep="\n  ")
        return 1
    print(f"ok: import avo loaded {len(loaded)} modules, none optional and no plugin code")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
