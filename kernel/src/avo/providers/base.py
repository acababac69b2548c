"""Model provider protocols: what the runtime calls to get a decision."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import JsonValue

from avo.models import ModelRequest, ModelResponse


@runtime_checkable
class ModelProvider(Protocol):
    """Anything that turns a ModelRequest into a ModelResponse."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Return the model's decision for ``request``."""
        ...


@runtime_checkable
class StatefulModelProvider(Protocol):
    """A provider whose state must be checkpointed to resume safely (e.g. FakeProvider)."""

    def snapshot_state(self) -> dict[str, JsonValue]:
        """Return a JSON snapshot of the provider's state."""
        ...

    def restore_state(self, state: dict[str, JsonValue]) -> None:
        """Restore a snapshot taken by ``snapshot_state``."""
        ...


__all__ = ["ModelProvider", "StatefulModelProvider"]
