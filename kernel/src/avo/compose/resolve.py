"""One resolution of the configuration, shared by every command and by :func:`compose`.

Layers, lowest first; a higher layer wins key by key:

1. **defaults** — the store is the SQLite file ``avo.db``;
2. **user config** — ``config.toml`` in the user's config directory
   (``AVO_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/avo``, else ``~/.config/avo``),
   written by ``avo setup``;
3. **workspace config** — ``avo.toml`` (or ``pyproject.toml`` with
   ``[tool.avo]``) in the current directory, or the file ``--config`` names;
4. **environment** — ``AVO_PROVIDER``, ``AVO_MODEL``, ``AVO_DATABASE_PATH``,
   ``AVO_PERMISSION_MODE``, ``AVO_ENGINE`` and the ``AVO_MAX_*`` policy overrides;
5. **flags** — ``--provider``, ``--model``, ``--store``, ``-d``, ``--tool``, ...

Tables merge key by key; lists (``tools``, ``hooks``, ``notifiers``) are
replaced whole. A plugin table (``[provider]``, ``[store]``,
``[engine]``) that names a different plugin (or, for the store, another
location) replaces the lower one whole, so one provider's settings never
leak into another's. :attr:`ResolvedConfig.sources` says where every value
came from (``avo config show`` prints it).

Secrets stay out of config files: keys come from the environment, then from
the credentials ``avo setup`` stored (see :mod:`avo.compose.credentials`);
:attr:`ResolvedConfig.environ` is that merged view.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from avo.compose.config import AvoConfig, find_config, read_config_file, validation_error
from avo.config import DEFAULT_DATABASE, apply_runtime_overrides
from avo.exceptions import ConfigError

USER_CONFIG_FILE = "config.toml"
DEFAULT = "default"

# Tables that name one plugin: naming another replaces the table whole. (The
# [permission] table merges instead: its allow/ask/deny rules outlive a change of mode.)
_PLUGIN_TABLES = {"provider": ("name",), "store": ("name", "location"), "engine": ("name",)}
_LIST_KEYS = frozenset({"tools", "hooks", "notifiers"})
_ENV_KEYS: dict[str, str] = {
    "AVO_PROVIDER": "provider.name",
    "AVO_MODEL": "provider.settings.model",
    "AVO_DATABASE_PATH": "store.location",
    "AVO_PERMISSION_MODE": "permission.mode",
    "AVO_ENGINE": "engine.name",
}


def user_config_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """``AVO_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/avo``, else ``$HOME/.config/avo``.

    None in an environment without a home (tests pass ``environ={}``).
    """
    env = os.environ if environ is None else environ
    configured = env.get("AVO_CONFIG_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    base = env.get("XDG_CONFIG_HOME", "").strip()
    home = env.get("HOME", "").strip()
    if base:
        return Path(base) / "avo"
    return Path(home) / ".config" / "avo" if home else None


def user_config_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where ``avo setup`` writes the user config (it may not exist)."""
    directory = user_config_dir(environ)
    return directory / USER_CONFIG_FILE if directory is not None else None


@dataclass
class ResolvedConfig:
    """The merged configuration and where each value came from."""

    config: AvoConfig
    sources: dict[str, str]
    files: list[str]
    environ: Mapping[str, str]
    workspace_file: str | None = None
    user_file: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def store_location(self) -> str:
        """The event store location every command uses."""
        store = self.config.store
        return str(store.location) if store and store.location else DEFAULT_DATABASE

    @property
    def label(self) -> str:
        """The files the config came from, for messages (``(no config file)`` if none)."""
        return " + ".join(self.files) if self.files else "(no config file)"

    def source(self, key: str) -> str:
        """Where ``key`` (dotted, e.g. ``provider.name``) came from; its nearest parent's source."""
        probe = key
        while probe:
            if probe in self.sources:
                return self.sources[probe]
            probe = probe.rpartition(".")[0]
        return DEFAULT if key == "store.location" else self.label

    @property
    def configured(self) -> bool:
        """True when any layer chose a provider (``avo setup`` is offered otherwise)."""
        return self.config.provider is not None


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            flat.update(_flatten(value, dotted))
        else:
            flat[dotted] = value
    return flat


class _Merger:
    """Folds layers into one raw table while recording each leaf's source."""

    def __init__(self) -> None:
        self.raw: dict[str, Any] = {}
        self.sources: dict[str, str] = {}

    def _drop_sources(self, prefix: str) -> None:
        for key in [k for k in self.sources if k == prefix or k.startswith(prefix + ".")]:
            del self.sources[key]

    def layer(self, table: Mapping[str, Any], source: str) -> None:
        for key, value in table.items():
            current = self.raw.get(key)
            if key in _PLUGIN_TABLES and isinstance(value, Mapping):
                if isinstance(current, dict) and not _switches_plugin(key, current, value):
                    _deep_merge(current, value)
                else:
                    self._drop_sources(key)
                    self.raw[key] = _copy(value)
            elif key in _LIST_KEYS or not isinstance(value, Mapping):
                self._drop_sources(key)
                self.raw[key] = _copy(value)
            elif isinstance(current, dict):
                _deep_merge(current, value)
            else:
                self._drop_sources(key)
                self.raw[key] = _copy(value)
            for leaf in _flatten({key: value}):
                self.sources[leaf] = source

    def set(self, dotted: str, value: Any, source: str) -> None:
        """One value from the environment or a flag (``provider.name``, ``store.location``)."""
        parts = dotted.split(".")
        self.layer(_nest(parts, value), source)


def _switches_plugin(key: str, current: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return any(
        field_name in new and new[field_name] != current.get(field_name)
        for field_name in _PLUGIN_TABLES[key]
    )


def _nest(parts: list[str], value: Any) -> dict[str, Any]:
    table: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        table = {part: table}
    return table


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _deep_merge(target: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _deep_merge(target[key], value)
        else:
            target[key] = _copy(value)


def _read_layer(path: Path) -> tuple[dict[str, Any], str]:
    """A config file's raw table, validated on its own so errors name that file."""
    raw, label = read_config_file(path)
    try:
        AvoConfig.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(exc, file=label, model=AvoConfig) from None
    return raw, label


def _env_layer(merger: _Merger, env: Mapping[str, str]) -> None:
    for variable, dotted in _ENV_KEYS.items():
        value = env.get(variable, "").strip()
        if value:
            merger.set(dotted, value, f"env {variable}")
    # validated here (a bad number is a ConfigError naming the variable)
    for key, value in apply_runtime_overrides({}, env).items():
        merger.set(f"policy.{key}", value, f"env {_POLICY_ENV[key]}")


_POLICY_ENV = {
    "max_total_tokens": "AVO_MAX_TOTAL_TOKENS",
    "max_runtime_seconds": "AVO_MAX_RUNTIME_SECONDS",
    "repeated_action_limit": "AVO_REPEATED_ACTION_LIMIT",
}


def resolve_config(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    discover: bool = True,
    user: bool = True,
    provider: str | None = None,
    model: str | None = None,
    store: str | None = None,
    database: str | Path | None = None,
    tools: Iterable[str] | None = None,
    permission_mode: str | None = None,
    system_prompt: str | None = None,
    engine: str | None = None,
) -> ResolvedConfig:
    """Resolve flags > environment > workspace config > user config > defaults.

    :param path: the workspace config file (``--config``); None looks for
        ``avo.toml`` / ``pyproject.toml [tool.avo]`` in ``cwd`` when ``discover``.
    :param user: also read the user config (``avo setup``'s file).
    :param provider, model, store, database, tools, permission_mode, system_prompt, engine:
        the command-line flags.
    """
    from avo.compose.credentials import with_credentials

    env = with_credentials(os.environ if environ is None else environ)
    merger = _Merger()
    merger.set("store.location", DEFAULT_DATABASE, DEFAULT)
    files: list[str] = []
    user_file = None
    user_path = user_config_path(env) if user else None
    if user_path is not None and user_path.is_file():
        raw, user_file = _read_layer(user_path)
        merger.layer(raw, user_file)
        files.append(user_file)
    workspace = Path(path) if path is not None else None
    if workspace is None and discover:
        workspace = find_config(Path(cwd) if cwd is not None else None)
    workspace_file = None
    if workspace is not None:
        if workspace.is_dir():
            raise ConfigError(
                f"--config {workspace} is a directory; pass the avo.toml file inside it "
                f"(e.g. {workspace / 'avo.toml'})",
                file=str(workspace),
            )
        raw, workspace_file = _read_layer(workspace)
        merger.layer(raw, workspace_file)
        files.append(workspace_file)
    _env_layer(merger, env)
    flags: list[tuple[str, Any, str]] = [
        ("provider.name", provider, "flag --provider"),
        ("provider.settings.model", model, "flag --model"),
        ("store.location", str(database) if database is not None else None, "flag -d/--database"),
        ("store.name", store, "flag --store"),
        ("permission.mode", permission_mode, "flag --permission-mode"),
        ("system_prompt", system_prompt, "flag --system-prompt"),
        ("engine.name", engine, "flag --engine"),
    ]
    for dotted, value, source in flags:
        if value is not None and value != "":
            merger.set(dotted, value, source)
    if tools is not None:
        merger.layer({"tools": list(tools)}, "flag --tool")
    label = " + ".join(files) if files else "(no config file)"
    try:
        config = AvoConfig.model_validate(merger.raw)
    except ValidationError as exc:
        raise validation_error(exc, file=label, model=AvoConfig) from None
    return ResolvedConfig(
        config=config,
        sources=merger.sources,
        files=files,
        environ=env,
        workspace_file=workspace_file,
        user_file=user_file,
        raw=merger.raw,
    )


__all__ = [
    "DEFAULT",
    "USER_CONFIG_FILE",
    "ResolvedConfig",
    "resolve_config",
    "resolve_recorded",
    "user_config_dir",
    "user_config_path",
]


def resolve_recorded(
    config: Mapping[str, Any], *, environ: Mapping[str, str] | None = None, label: str
) -> ResolvedConfig:
    """A run's recorded configuration (its composition record) as a ResolvedConfig.

    Secrets are not in the record: ``environ`` (plus stored credentials)
    supplies them again.
    """
    from avo.compose.credentials import with_credentials

    env = with_credentials(os.environ if environ is None else environ)
    raw = _copy(dict(config))
    try:
        parsed = AvoConfig.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(exc, file=label, model=AvoConfig) from None
    sources = {key: label for key in _flatten(raw)}
    return ResolvedConfig(config=parsed, sources=sources, files=[label], environ=env, raw=raw)
