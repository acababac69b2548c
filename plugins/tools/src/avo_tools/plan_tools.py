"""submit_plan and plan_tasks: the agent's plan, kept per tool instance."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from avo.exceptions import ToolExecutionError
from avo.models import ToolRisk
from avo.tools import FunctionTool
from avo_tools._build import build_tool


class SubmitPlanArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    plan_text: str = Field(min_length=1, description="The plan, step by step, for approval.")


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=64)
    title: str = Field(min_length=1, max_length=500)


class SubTask(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=64)
    parent_id: str = Field(min_length=1, max_length=64)
    title: str = Field(min_length=1, max_length=500)


class PlanTasksArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    goal: str | None = Field(default=None, min_length=1, max_length=2_000)
    tasks: list[Task] | None = Field(default=None, max_length=200)
    subtasks: list[SubTask] | None = Field(default=None, max_length=500)
    complete: str | None = Field(default=None, description="Id of a task or subtask now done.")
    reset: bool = False


@dataclass
class PlanBoard:
    """The plan state behind one plan_tasks tool."""

    goal: str | None = None
    tasks: dict[str, dict[str, object]] = field(default_factory=dict)
    subtasks: dict[str, dict[str, object]] = field(default_factory=dict)
    submitted: list[str] = field(default_factory=list)

    def snapshot(self) -> dict[str, object]:
        tasks = []
        for task_id, task in self.tasks.items():
            subs = [s for s in self.subtasks.values() if s["parent_id"] == task_id]
            tasks.append({**task, "subtasks": subs})
        remaining = [t["id"] for t in self.tasks.values() if not t["done"]]
        remaining += [s["id"] for s in self.subtasks.values() if not s["done"]]
        return {"goal": self.goal, "tasks": tasks, "remaining": remaining}


def _apply(board: PlanBoard, args: PlanTasksArguments) -> dict[str, object]:
    if args.reset:
        board.goal, board.tasks, board.subtasks = None, {}, {}
    if args.goal is not None:
        board.goal = args.goal
    for task in args.tasks or []:
        board.tasks[task.id] = {"id": task.id, "title": task.title, "done": False}
    for sub in args.subtasks or []:
        if sub.parent_id not in board.tasks:
            raise ToolExecutionError(
                f"subtask {sub.id!r} names unknown parent task {sub.parent_id!r}; "
                f"known tasks: {sorted(board.tasks)}"
            )
        board.subtasks[sub.id] = {
            "id": sub.id,
            "parent_id": sub.parent_id,
            "title": sub.title,
            "done": False,
        }
    if args.complete is not None:
        item = board.tasks.get(args.complete) or board.subtasks.get(args.complete)
        if item is None:
            raise ToolExecutionError(f"no task or subtask with id {args.complete!r}")
        item["done"] = True
    return board.snapshot()


def plan_tasks_tool(board: PlanBoard | None = None) -> FunctionTool[PlanTasksArguments]:
    """Keep a goal / task / subtask list the agent updates as it works."""
    state = board or PlanBoard()
    return build_tool(
        name="plan_tasks",
        argument_kinds={"goal": "text"},
        description="Set the goal, add tasks/subtasks, mark one complete, or reset the plan.",
        arguments_model=PlanTasksArguments,
        function=lambda args: _apply(state, args),
        risk=ToolRisk.INSPECT,
    )


def submit_plan_tool(board: PlanBoard | None = None) -> FunctionTool[SubmitPlanArguments]:
    """Submit a plan (in plan mode, edits are allowed only after this)."""
    state = board or PlanBoard()

    def _submit(args: SubmitPlanArguments) -> dict[str, object]:
        state.submitted.append(args.plan_text)
        return {"submitted": True, "plan_text": args.plan_text, "revision": len(state.submitted)}

    return build_tool(
        name="submit_plan",
        argument_kinds={"plan_text": "text"},
        description="Submit your plan before making changes; returns the plan revision.",
        arguments_model=SubmitPlanArguments,
        function=_submit,
        risk=ToolRisk.INSPECT,
    )


__all__ = [
    "PlanBoard",
    "PlanTasksArguments",
    "SubTask",
    "SubmitPlanArguments",
    "Task",
    "plan_tasks_tool",
    "submit_plan_tool",
]
