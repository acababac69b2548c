"""avo model providers over HTTP, the routers, env configuration and ``avo doctor``.

Import the adapters from their modules (``avo_providers.anthropic`` ...); this
package's top level stays import-cheap so entry-point discovery costs nothing.
"""

from __future__ import annotations

__version__ = "1.0.0"

__all__ = ["__version__"]
