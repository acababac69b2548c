"""ask_user: the model asks the person running it a question.

The tool is answered by a person, not by code: its metadata says
``asks_human``, so the run records the question (a ``human_input_requested``
event), pauses durably, and continues once someone answers it — at the
terminal prompt, or later with ``avo runs answer RUN_ID TEXT`` from any
process that shares the store. The answer (``{"answer": text}``) is the
call's result.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from avo.exceptions import ToolExecutionError
from avo.models import ToolRisk
from avo.tools import FunctionTool


class AskUserArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=2_000, description="What to ask, in one go.")
    choices: list[str] | None = Field(
        default=None,
        max_length=20,
        description="Answers to pick from (omit for a free-text answer).",
    )


def _not_here(arguments: AskUserArguments) -> None:
    raise ToolExecutionError(
        "ask_user is answered by a person through the runtime (the run pauses for it); "
        "it cannot run on its own here",
        tool_name="ask_user",
    )


def ask_user_tool() -> FunctionTool[AskUserArguments]:
    """The ``ask_user`` tool (risk ``inspect``; answered by a person)."""
    return FunctionTool(
        name="ask_user",
        description=(
            "Ask the user a question and wait for the answer. Use it when you cannot "
            "decide without them; the run pauses until they answer."
        ),
        arguments_model=AskUserArguments,
        function=_not_here,
        risk=ToolRisk.INSPECT,
        argument_kinds={"question": "text", "choices[]": "text"},
        asks_human=True,
        run_in_thread=False,
    )


__all__ = ["AskUserArguments", "ask_user_tool"]
