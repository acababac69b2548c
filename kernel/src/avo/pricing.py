"""What model calls cost: prices per model, and the cost of a TokenUsage at them.

Prices are USD per million tokens, the unit vendors publish: ``input``,
``output``, and the prompt-cache prices ``cache_read`` (tokens read from the
vendor's cache) and ``cache_write`` (tokens written to it). A usage is priced
as::

    uncached input x input  +  cache reads x cache_read  +  cache writes x cache_write
    +  output (reasoning included) x output

A cache price a model does not declare is the input price (no discount, no
surcharge). The saving from caching is what the cached tokens would have cost
at the input price, minus what they did cost (a cache write costs more than a
plain input token, so a run that only writes can show a negative saving).

Which prices apply to a call (:class:`PriceBook`), first match wins:

1. ``[pricing]`` in avo.toml, by ``"provider/model"`` or by model name;
2. flat rates: ``[budget] input_per_1k`` / ``output_per_1k``, or the
   ``AVO_USAGE_RATES_*`` variables (they price every model alike);
3. the model catalog of the provider plugin (``ProviderSpec.catalog``); a
   plugin that runs models locally (``ProviderSpec.local``, e.g. Ollama)
   prices every model at zero: free, not unknown;
4. otherwise the call is unpriced, and every total that includes it says so.

Costs are exact decimals; reports round them to 0.000001 USD.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from avo.exceptions import ConfigError

if TYPE_CHECKING:
    from avo.models import TokenUsage

MILLION = Decimal(1_000_000)
COST_QUANTUM = Decimal("0.000001")
_ZERO = Decimal(0)


@dataclass(frozen=True)
class ModelPrices:
    """USD per million tokens; ``checked`` is when they were read off the vendor's page."""

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    checked: str | None = None

    @property
    def free(self) -> bool:
        """True when every price is zero (a local model)."""
        return not (self.input or self.output or self.cache_read or self.cache_write)

    def per_1k(self) -> tuple[Decimal, Decimal]:
        """``(input, output)`` in USD per 1k tokens (the kernel's older rate unit)."""
        return self.input / 1000, self.output / 1000

    @classmethod
    def from_per_1k(cls, rates: tuple[Any, Any], *, checked: str | None = None) -> ModelPrices:
        """Prices from ``(input, output)`` USD per 1k tokens."""
        return cls(Decimal(str(rates[0])) * 1000, Decimal(str(rates[1])) * 1000, checked=checked)


FREE = ModelPrices(_ZERO, _ZERO, _ZERO, _ZERO)
"""The prices of a model that runs on your own machine."""


def prices(
    input: Any,
    output: Any,
    cache_read: Any = None,
    cache_write: Any = None,
    *,
    checked: str | None = None,
) -> ModelPrices:
    """``ModelPrices`` from numbers or strings (USD per million tokens)."""

    def money(value: Any) -> Decimal | None:
        return None if value is None else Decimal(str(value))

    return ModelPrices(
        Decimal(str(input)), Decimal(str(output)), money(cache_read), money(cache_write), checked
    )


@dataclass(frozen=True)
class Cost:
    """The cost of one usage at one set of prices (exact USD)."""

    total: Decimal
    saving: Decimal
    """What prompt caching saved (negative when cache writes cost more than reads saved)."""


def cost_of(usage: TokenUsage, at: ModelPrices) -> Cost:
    """What ``usage`` costs ``at`` these prices, and what caching saved."""
    read_rate = at.cache_read if at.cache_read is not None else at.input
    write_rate = at.cache_write if at.cache_write is not None else at.input
    reads, writes = usage.cache_read_tokens, usage.cache_write_tokens
    total = (
        usage.uncached_input_tokens * at.input
        + reads * read_rate
        + writes * write_rate
        + usage.output_tokens * at.output
    ) / MILLION
    saving = ((reads + writes) * at.input - reads * read_rate - writes * write_rate) / MILLION
    return Cost(total, saving)


def usd(value: Decimal | None) -> str:
    """A cost rounded to 0.000001 USD, as a plain decimal string ("unknown" for None)."""
    if value is None:
        return "unknown"
    return format(value.quantize(COST_QUANTUM), "f")


def _amount(table: str, key: str, raw: Any) -> Decimal:
    try:
        value = Decimal(str(raw))
    except (InvalidOperation, ValueError):
        raise ConfigError(
            f"{table}.{key} = {raw!r} is not a number; give USD per million tokens, e.g. 0.15",
            key=f"{table}.{key}",
        ) from None
    if not value.is_finite() or value < 0:
        raise ConfigError(
            f"{table}.{key} = {raw!r} must be a non-negative USD per million tokens",
            key=f"{table}.{key}",
        )
    return value


_PRICE_KEYS = ("input", "output", "cache_read", "cache_write", "checked")


def pricing_from_settings(table: Mapping[str, Any] | None) -> dict[str, ModelPrices]:
    """The ``[pricing]`` table of avo.toml: ``"provider/model"`` or model -> prices.

    ``[pricing."openai/gpt-4o-mini"]`` with ``input``, ``output`` and optional
    ``cache_read`` / ``cache_write`` (USD per million tokens).
    """
    out: dict[str, ModelPrices] = {}
    for name, entry in dict(table or {}).items():
        label = f"[pricing.{name!r}]" if "/" in name or "." in name else f"[pricing.{name}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f"{label} must be a table with input and output (USD per million tokens), "
                f"got {entry!r}",
                key=f"pricing.{name}",
            )
        unknown = sorted(set(entry) - set(_PRICE_KEYS))
        if unknown:
            raise ConfigError(
                f"{label}: unknown keys {unknown}; allowed: {', '.join(_PRICE_KEYS)}",
                key=f"pricing.{name}",
            )
        missing = [key for key in ("input", "output") if key not in entry]
        if missing:
            raise ConfigError(
                f"{label} needs {' and '.join(missing)} (USD per million tokens)",
                key=f"pricing.{name}",
            )
        optional = {
            key: _amount(f"pricing.{name}", key, entry[key])
            for key in ("cache_read", "cache_write")
            if entry.get(key) is not None
        }
        out[str(name)] = ModelPrices(
            _amount(f"pricing.{name}", "input", entry["input"]),
            _amount(f"pricing.{name}", "output", entry["output"]),
            optional.get("cache_read"),
            optional.get("cache_write"),
            str(entry["checked"]) if entry.get("checked") is not None else "avo.toml",
        )
    return out


CatalogLookup = Callable[[str | None, str | None], "ModelPrices | None"]
"""(provider, model) -> the catalog's prices, or None when the catalog does not know."""


class PriceBook:
    """Finds the prices of a (provider, model) pair; see the module docstring for the order."""

    def __init__(
        self,
        *,
        overrides: Mapping[str, ModelPrices] | None = None,
        flat: ModelPrices | None = None,
        catalog: CatalogLookup | None = None,
    ) -> None:
        self.overrides = dict(overrides or {})
        self.flat = flat
        self.catalog = catalog

    def lookup(self, provider: str | None, model: str | None) -> tuple[ModelPrices | None, str]:
        """``(prices, source)``; source is ``[pricing]``, ``rates``, ``catalog`` or ``unknown``."""
        if model is not None:
            for key in (f"{provider}/{model}" if provider else None, model):
                if key is not None and key in self.overrides:
                    return self.overrides[key], "[pricing]"
        if self.flat is not None:
            return self.flat, "rates"
        if self.catalog is not None:
            found = self.catalog(provider, model)
            if found is not None:
                return found, "catalog"
        return None, "unknown"

    def cost(self, provider: str | None, model: str | None, usage: TokenUsage) -> Cost | None:
        """The cost of ``usage`` by this provider's model, or None when unpriced."""
        found, _ = self.lookup(provider, model)
        return cost_of(usage, found) if found is not None else None


def catalog_from_plugins(manager: Any, environ: Mapping[str, str] | None = None) -> CatalogLookup:
    """A catalog lookup over the installed provider plugins' specs (loaded on first use).

    A call is priced from the plugin named like its provider when that plugin
    knows the model (a local plugin prices everything at zero); else from any
    plugin whose catalog lists the model (an adapter may be named differently
    from its plugin, e.g. ``openai-compatible`` from ``openai``).
    """
    specs: dict[str, Any] | None = None

    def load() -> dict[str, Any]:
        nonlocal specs, manager
        if specs is None:
            specs = {}
            if manager is None:
                from avo.plugins.manager import PluginManager

                manager = PluginManager(environ=environ)
            for name in manager.names("provider"):
                try:
                    specs[name] = manager.get("provider", name)
                except Exception:  # a broken plugin must not stop cost accounting
                    continue
        return specs

    def model_prices(spec: Any, model: str) -> ModelPrices | None:
        info = (getattr(spec, "catalog", None) or {}).get(model)
        found = getattr(info, "prices", None)
        if found is not None:
            return found  # type: ignore[no-any-return]
        if getattr(spec, "local", False):
            return FREE
        legacy = (getattr(spec, "pricing", None) or {}).get(model)
        return ModelPrices.from_per_1k(legacy) if legacy is not None else None

    def lookup(provider: str | None, model: str | None) -> ModelPrices | None:
        if model is None:
            return None
        table = load()
        own = table.get(provider or "")
        if own is not None:
            found = model_prices(own, model)
            if found is not None:
                return found
        for name, spec in table.items():
            if name == provider:
                continue
            info = (getattr(spec, "catalog", None) or {}).get(model)
            if info is not None or model in (getattr(spec, "pricing", None) or {}):
                found = model_prices(spec, model)
                if found is not None:
                    return found
        return None

    return lookup


def price_book(
    *,
    pricing: Mapping[str, Any] | None = None,
    budget: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    manager: Any = None,
) -> PriceBook:
    """The price book of a configuration: ``[pricing]``, flat rates, the plugins' catalogs."""
    from avo.usage import rates_from_env

    flat: ModelPrices | None = None
    table = dict(budget or {})
    if table.get("input_per_1k") is not None or table.get("output_per_1k") is not None:
        flat = ModelPrices.from_per_1k(
            (table.get("input_per_1k") or 0, table.get("output_per_1k") or 0), checked="[budget]"
        )
    else:
        rates = rates_from_env(environ)
        if rates is not None:
            flat = ModelPrices.from_per_1k(rates, checked="AVO_USAGE_RATES")
    return PriceBook(
        overrides=pricing_from_settings(pricing),
        flat=flat,
        catalog=catalog_from_plugins(manager, environ),
    )


__all__ = [
    "COST_QUANTUM",
    "FREE",
    "MILLION",
    "Cost",
    "ModelPrices",
    "PriceBook",
    "catalog_from_plugins",
    "cost_of",
    "price_book",
    "prices",
    "pricing_from_settings",
    "usd",
]
