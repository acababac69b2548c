"""avo-chat: ``avo chat``, the interactive agent REPL, as a plugin of the avo kernel.

See docs/chat.md. The public pieces for plugin authors are the slash-command
context (:class:`avo_chat.slash.ChatContext`) and the kernel's
:class:`avo.plugins.SlashCommandSpec`; everything else may change.
"""

from __future__ import annotations

__version__ = "1.0.0"

__all__ = ["__version__"]
