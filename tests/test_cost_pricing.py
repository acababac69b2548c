"""Provider plugins' pricing tables price the ledger when no AVO_USAGE_RATES_* is set."""

from decimal import Decimal

from avo.models import ModelResponse, TokenUsage
from avo.plugins.manager import PluginManager
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo_ledger import aggregate_costs, pricing_from_plugins
from avo_ledger.plugin import LedgerHooks


class SonnetLike(FakeProvider):
    """Reports itself as the anthropic plugin's model (the wire is not under test here)."""

    name = "anthropic"
    model = "claude-sonnet-4-6"


def test_installed_provider_plugins_contribute_pricing():
    pricing = pricing_from_plugins(PluginManager(environ={}), providers=["anthropic", "openai"])
    assert pricing["claude-sonnet-4-6"] == (Decimal("0.003"), Decimal("0.015"))
    assert "gpt-4o" in pricing


async def test_ledger_hook_prices_runs_from_the_provider_plugin(tmp_path):
    db = tmp_path / "avo.db"
    hooks = LedgerHooks()  # what the avo.hooks "ledger" entry point holds
    assert hooks.spec.factory({"database": str(db)}, environ={}) == []
    manager = PluginManager(autoload=False, environ={})
    manager.register(hooks, "ledger")
    script = [ModelResponse(content="hi", usage=TokenUsage(input_tokens=2000, output_tokens=100))]
    try:
        result = await AgentRuntime(provider=SonnetLike(script), plugins=manager).run("x")
    finally:
        hooks.disable()
    assert result.status.value == "completed"
    report = aggregate_costs(db)
    (run,) = report.runs
    assert run.run_id == result.run_id
    # 2000 * 0.003/1k + 100 * 0.015/1k
    assert run.cost_usd == Decimal("0.007500")
    assert [m.model for m in report.models] == ["claude-sonnet-4-6"]
