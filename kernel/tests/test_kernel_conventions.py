"""Conventions enforced mechanically (STYLE.md): imports, errors, hooks, docstrings."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import avo
from avo import exceptions, hookspecs

KERNEL_SRC = Path(avo.__file__).parent
HEAVY = (
    "httpx",
    "docker",
    "anthropic",
    "openai",
    "mcp",
    "opentelemetry",
    "asyncpg",
    "psycopg",
    "langchain_core",
)


def _kernel_modules() -> list[str]:
    names = ["avo"]
    for info in pkgutil.walk_packages([str(KERNEL_SRC)], prefix="avo."):
        names.append(info.name)
    return names


def test_import_avo_pulls_in_nothing_optional() -> None:
    code = (
        "import sys, avo\n"
        "from avo import AgentRuntime, FakeProvider, FunctionTool, LoopPolicy\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r}\n"
        "       or (m.startswith('avo_') and m.split('.')[0] != 'avo_native')]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_bare_import_avo_does_not_load_pydantic() -> None:
    code = "import sys, avo; print('pydantic' in sys.modules, avo.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "False"


def test_kernel_source_never_imports_a_plugin() -> None:
    offenders = []
    for path in KERNEL_SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top.startswith("avo_") and top != "avo_native":
                    offenders.append(f"{path.relative_to(KERNEL_SRC)}: {module}")
    assert offenders == []


def test_every_public_name_resolves_and_is_documented() -> None:
    assert avo.__all__ == sorted(avo.__all__)
    for name in avo.__all__:
        value = getattr(avo, name)
        assert inspect.getdoc(value), f"avo.{name} has no docstring"


def test_every_exception_is_an_avo_error() -> None:
    for name in exceptions.__all__:
        value = getattr(exceptions, name)
        assert issubclass(value, exceptions.AvoError), name
    provider_error = exceptions.ProviderError("x")
    assert provider_error.retryable is True
    assert exceptions.FakeProviderExhaustedError().retryable is False
    assert issubclass(exceptions.EventInvariantError, exceptions.StorageError)
    assert issubclass(exceptions.ConfigError, ValueError)


@pytest.mark.parametrize("module_name", _kernel_modules())
def test_kernel_exception_classes_join_the_hierarchy(module_name: str) -> None:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:  # optional accelerators etc.
        pytest.skip(f"{module_name}: {exc}")
    allowed = {"BreakerOpen", "OtelDisabledError"}  # names fixed by the reference
    for name, value in vars(module).items():
        if (
            inspect.isclass(value)
            and issubclass(value, BaseException)
            and value.__module__ == module_name
            and name not in allowed
        ):
            assert issubclass(value, exceptions.AvoError), f"{module_name}.{name}"


def test_every_hook_documents_each_argument_and_its_dispatch() -> None:
    specs = [v for k, v in vars(hookspecs).items() if k.startswith("avo_") and callable(v)]
    assert len(specs) >= 11
    for spec in specs:
        doc = inspect.getdoc(spec) or ""
        assert "Dispatch:" in doc, spec.__name__
        for parameter in inspect.signature(spec).parameters:
            assert f":param {parameter}:" in doc, f"{spec.__name__} does not document {parameter}"
