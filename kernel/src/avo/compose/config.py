"""The ``avo.toml`` schema (or ``[tool.avo]`` in ``pyproject.toml``) and its loader.

Every table names a plugin and carries that plugin's own ``settings`` table::

    [provider]
    name = "fake"
    [provider.settings]
    script = [{content = "done"}]

    [store]
    location = "avo.db"          # the store plugin is chosen by suffix or URL scheme

    tools = ["read_file", {name = "grep", settings = {max_matches = 50}}]

    [permission]                 # default when absent: mode "default" (edits and
    mode = "accept_edits"        # commands ask, read-only tools run)
    deny = [{tool = "run_shell", command = "git push"}]
    allow = [{tool = "write_file", path = "src/**"}]

    [policy]
    max_steps = 10

    [budget]                     # cost bounds: stop the run past hard_limit_usd
    hard_limit_usd = "2.00"

    [media]                      # an image or document the model cannot take:
    fallback = "placeholder"     # "refuse" (default: stop before the run) or a text line

    [pricing."openai/gpt-4o"]    # prices for `avo cost --events` (USD per million
    input = "2.50"               # tokens; cache_read / cache_write optional); the
    output = "10"                # provider plugins' catalogs price the rest

    [rate_limit]                 # provider call pacing
    requests_per_minute = 50

    [context]                    # the context window and the context policy
    window = 8192                # (see docs/context.md for the policy's knobs)
    [session]                    # the session `avo run` continues by default
    id = "main"
    [instructions]               # AGENTS.md (avo-context), skills (avo-skills) and MCP
    [skills]                     # servers (avo-mcp): each table enables that bundle and
    [mcp]                        # holds its settings; enabled = false turns it off
    [memory]                     # long-term memory: an avo.memory plugin (avo-memory),
    provider = "sqlite"          # recall per run and what runs write back

    [engine]                     # where runs are driven: in-process (default) or an
    name = "temporal"            # engine plugin's workers (avo worker, docs/temporal.md)
    [engine.settings]
    address = "temporal.internal:7233"

(top-level ``shapers = [...]`` and ``bundles = [...]`` enable more request
shapers and bundles by plugin name, like ``tools``.)

Errors are :class:`~avo.exceptions.ConfigError` naming the file, the dotted key
and the choices that would have been accepted.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from avo.exceptions import ConfigError

CONFIG_FILE = "avo.toml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PluginRef(_Strict):
    """A plugin chosen by name, with its settings table."""

    name: str = Field(min_length=1)
    settings: dict[str, Any] = Field(default_factory=dict)


class StoreRef(_Strict):
    """The event store: by ``name``, or picked from ``location``'s scheme/suffix."""

    name: str | None = None
    location: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


class PermissionRef(_Strict):
    """The permission mode (a ``avo.permissions`` plugin), its rules and settings.

    ``allow`` / ``ask`` / ``deny`` hold rules (a tool name, or a table with
    ``tool`` and argument matchers ``path`` / ``host`` / ``command`` /
    ``text``); ``workspace`` is what relative paths are resolved against and
    ``sensitive_paths`` extends the built-in sensitive list. The mode plugin
    validates them (they are passed to it with ``settings``).
    """

    mode: str = Field(default="default", min_length=1)
    allow: list[str | dict[str, Any]] = Field(default_factory=list)
    ask: list[str | dict[str, Any]] = Field(default_factory=list)
    deny: list[str | dict[str, Any]] = Field(default_factory=list)
    workspace: str | None = None
    sensitive_paths: list[str] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)

    def plugin_settings(self) -> dict[str, Any]:
        """``settings`` plus the rule keys that are set (what the mode plugin receives)."""
        merged = dict(self.settings)
        for key in ("allow", "ask", "deny", "sensitive_paths"):
            value = getattr(self, key)
            if value:
                merged[key] = value
        if self.workspace is not None:
            merged["workspace"] = self.workspace
        return merged


class PluginSwitches(_Strict):
    """``[plugins]``: the same switches as ``AVO_PLUGINS_*`` (the environment wins)."""

    autoload: bool | None = None
    block: list[str] = Field(default_factory=list)
    allow: list[str] | None = None


class ContextSettings(BaseModel):
    """``[context]``: the model's context window and the context policy.

    Any other key is a setting of the policy (validated by the policy plugin).
    """

    model_config = ConfigDict(extra="allow")

    window: int | None = Field(default=None, gt=0)
    """The window in tokens; default: the provider's catalog, then ``default_window``."""
    default_window: int = Field(default=8192, gt=0)
    """The window assumed for a model nothing knows (recorded as source "default")."""
    policy: str = Field(default="compaction", min_length=1)
    """The bundle or shaper plugin that keeps requests inside the window; "none" for none."""


class SessionSettings(_Strict):
    """``[session]``: which session ``avo run`` continues when no flag says."""

    id: str | None = None


class EmbeddingsRef(_Strict):
    """``[memory.embeddings]``: the provider plugin (and model) that embeds memories."""

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    settings: dict[str, Any] = Field(default_factory=dict)


WriteMode = Literal["final_answer", "remember"]
_WRITE_DEFAULT: tuple[WriteMode, ...] = ("final_answer", "remember")


class MemorySettings(_Strict):
    """``[memory]``: long-term memory (an ``avo.memory`` plugin) for every run.

    ``write`` lists what runs store: ``final_answer`` (task and answer of every
    completed run) and ``remember`` (a tool the model calls). ``scope``:
    ``workspace`` keeps one memory per workspace directory, ``user`` one shared
    by all of the user's workspaces.
    """

    enabled: bool = True
    provider: str = Field(default="sqlite", min_length=1)
    scope: Literal["workspace", "user"] = "workspace"
    recall: int = Field(default=5, ge=0)
    """Memories shown to the model per run (0: write only)."""
    write: list[WriteMode] = Field(default_factory=lambda: list(_WRITE_DEFAULT))
    max_chars: int = Field(default=2000, gt=0)
    """The longest memory shown to the model (longer ones are cut)."""
    min_answer_chars: int = Field(default=1, ge=1)
    """Final answers shorter than this are not stored."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The memory plugin's own settings (its database path, ranking knobs, ...)."""
    embeddings: EmbeddingsRef | None = None


class AvoConfig(_Strict):
    """A whole ``avo.toml``."""

    provider: PluginRef | None = None
    store: StoreRef | None = None
    tools: list[str | PluginRef] = Field(default_factory=list)
    permission: PermissionRef | None = None
    hooks: list[str | PluginRef] = Field(default_factory=list)
    notifiers: list[str | PluginRef] = Field(default_factory=list)
    policy: dict[str, Any] = Field(default_factory=dict)
    budget: dict[str, Any] = Field(default_factory=dict)
    media: dict[str, Any] = Field(default_factory=dict)
    """``[media] fallback = "refuse" | "placeholder"``: an attachment the model cannot take."""
    pricing: dict[str, Any] = Field(default_factory=dict)
    """``[pricing."provider/model"]``: USD per million tokens (see avo.pricing)."""
    rate_limit: dict[str, Any] = Field(default_factory=dict)
    plugins: PluginSwitches = Field(default_factory=PluginSwitches)
    system_prompt: str | None = None
    context: ContextSettings | None = None
    session: SessionSettings = Field(default_factory=SessionSettings)
    instructions: dict[str, Any] | None = None
    skills: dict[str, Any] | None = None
    mcp: dict[str, Any] | None = None
    shapers: list[str | PluginRef] = Field(default_factory=list)
    bundles: list[str | PluginRef] = Field(default_factory=list)
    memory: MemorySettings | None = None
    engine: PluginRef | None = None


_MODELS_BY_KEY: dict[str, type[BaseModel]] = {
    "provider": PluginRef,
    "store": StoreRef,
    "permission": PermissionRef,
    "plugins": PluginSwitches,
    "tools": PluginRef,
    "hooks": PluginRef,
    "notifiers": PluginRef,
    "context": ContextSettings,
    "session": SessionSettings,
    "shapers": PluginRef,
    "bundles": PluginRef,
    "memory": MemorySettings,
    "engine": PluginRef,
}


def dotted(loc: tuple[Any, ...]) -> str:
    """``("tools", 0, "name")`` -> ``tools[0].name``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in ("str", "PluginRef"):  # pydantic's union-branch labels
            continue
        else:
            text += f".{part}" if text else str(part)
    return text


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``annotation`` (``X``, ``list[X]``, ``X | None``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        found = _nested_model(argument)
        if found is not None:
            return found
    return None


def known_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed where an unknown key ``loc`` appeared."""
    parents = [p for p in loc[:-1] if isinstance(p, str) and p not in ("str", "PluginRef")]
    target: type[BaseModel] = model
    if model is AvoConfig and parents:
        return sorted(_MODELS_BY_KEY.get(parents[0], AvoConfig).model_fields)
    for part in parents:  # follow nested models (a list of rule tables, ...)
        field = target.model_fields.get(part)
        nested = _nested_model(field.annotation) if field is not None else None
        if nested is None:
            break
        target = nested
    return sorted(target.model_fields)


def validation_error(
    exc: ValidationError, *, file: str, prefix: str = "", model: type[BaseModel] | None = None
) -> ConfigError:
    """Turn a pydantic error into a ConfigError naming the file, key and choices."""
    lines = []
    first_key = None
    for error in exc.errors():
        key = dotted(error["loc"])
        full = f"{prefix}.{key}" if prefix and key else (prefix or key)
        first_key = first_key or full
        if error["type"] == "extra_forbidden" and model is not None:
            known = ", ".join(known_keys(model, error["loc"])) or "(none)"
            lines.append(f"{file}: unknown key {full!r}; known keys: {known}")
        elif error["type"] == "extra_forbidden":
            lines.append(f"{file}: unknown key {full!r}")
        else:
            got = error.get("input")
            shown = f" (got {got!r})" if not isinstance(got, dict | list) else ""
            lines.append(f"{file}: {full}: {error['msg']}{shown}")
    return ConfigError("; ".join(lines), key=first_key, file=file)


def read_config_file(path: Path) -> tuple[dict[str, Any], str]:
    """The raw avo table of ``path`` (``[tool.avo]`` for a pyproject.toml) and its label."""
    label = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {label} does not exist", file=label) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{label}: not valid TOML: {exc}", file=label) from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("avo")
        if table is None:
            raise ConfigError(f"{label} has no [tool.avo] table", file=label)
        return dict(table), f"{label} [tool.avo]"
    return data, label


def find_config(directory: Path | None = None) -> Path | None:
    """``avo.toml`` in ``directory`` (default: cwd), else a pyproject.toml with [tool.avo]."""
    base = directory or Path.cwd()
    candidate = base / CONFIG_FILE
    if candidate.is_file():
        return candidate
    pyproject = base / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError:
            return None
        if "avo" in data.get("tool", {}):
            return pyproject
    return None


def load_config(path: Path | str | None) -> tuple[AvoConfig, str]:
    """Read and validate a config file; ``None`` gives the empty config.

    Returns the config and the label used in error messages.
    """
    if path is None:
        return AvoConfig(), "(no config file)"
    raw, label = read_config_file(Path(path))
    try:
        return AvoConfig.model_validate(raw), label
    except ValidationError as exc:
        raise validation_error(exc, file=label, model=AvoConfig) from None


__all__ = [
    "CONFIG_FILE",
    "AvoConfig",
    "ContextSettings",
    "EmbeddingsRef",
    "MemorySettings",
    "PermissionRef",
    "PluginRef",
    "PluginSwitches",
    "SessionSettings",
    "StoreRef",
    "dotted",
    "find_config",
    "known_keys",
    "load_config",
    "read_config_file",
    "validation_error",
]
