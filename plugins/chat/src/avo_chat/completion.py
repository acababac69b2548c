"""Tab completion in the chat's input: /commands, @paths and tool names."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from prompt_toolkit.completion import Completer, Completion

from avo_chat.mentions import complete as complete_path

if TYPE_CHECKING:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document


class ChatCompleter(Completer):
    """/commands at the start, @paths anywhere, tool names on Tab."""

    def __init__(self, ui: Any) -> None:
        self.ui = ui

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        word = document.get_word_before_cursor(WORD=True)
        registry = self.ui.chat.commands
        if text.startswith("/") and " " not in text and registry is not None:
            for name in registry.words():
                if name.startswith(text[1:]):
                    info = registry.find(name)
                    meta = info.spec.help if info and info.spec else ""
                    yield Completion("/" + name, start_position=-len(text), display_meta=meta)
            return
        if word.startswith("@"):
            for path in complete_path(self.ui.chat.workspace, word[1:]):
                yield Completion("@" + path, start_position=-len(word))
            return
        if complete_event.completion_requested and len(word) >= 2:
            for name in self.ui.tool_names:
                if name.startswith(word):
                    yield Completion(name, start_position=-len(word), display_meta="tool")


__all__ = ["ChatCompleter"]
