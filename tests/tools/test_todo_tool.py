from typing import Any

import pytest

from contextengine.tools.todo import plan_items


def test_todo_write_returns_the_list_and_a_recap(root, run) -> None:
    todos = [
        {"content": "read the code", "status": "done"},
        {"content": "fix the bug", "status": "in_progress"},
        {"content": "run tests", "status": "pending"},
        {"content": "old idea", "status": "failed"},
    ]
    out = run("todo_write", todos=todos)
    assert out.status == "success"
    assert out.data["todos"] == todos
    assert out.text == (
        "Todo list updated: 4 steps (1 pending, 1 in_progress, 1 done, 1 failed). Now: fix the bug"
    )
    assert out.data["recap"] == out.text
    assert list(root.iterdir()) == []


def test_todo_write_empty_list(run) -> None:
    assert run("todo_write", todos=[]).text == "Todo list updated: 0 steps."


def test_todo_statuses_are_checked(run) -> None:
    out = run("todo_write", todos=[{"content": "x", "status": "in progress"}])
    assert out.error.code == "invalid_arguments"
    assert "todos.0.status" in out.error.message
    assert run("todo_write", todos=[{"content": "", "status": "done"}]).error.code == (
        "invalid_arguments"
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {
            "todos": [
                {"content": "Read", "status": "completed"},
                {"content": "Fix", "status": "in_progress"},
            ]
        },
        {
            "todos": [
                {"description": "Read", "status": "completed"},
                {"description": "Fix", "status": "in_progress"},
            ]
        },
        {
            "plan": [
                {"step": "Read", "status": "completed"},
                {"step": "Fix", "status": "in_progress"},
            ]
        },
        {
            "command": "plan",
            "task_list": [
                {"title": "Read", "notes": "", "status": "done"},
                {"title": "Fix", "status": "in_progress"},
            ],
        },
    ],
    ids=["claude-code", "gemini-cli", "codex", "openhands-sdk"],
)
def test_other_harnesses_plan_tools_read_as_a_plan(arguments: dict[str, Any]) -> None:
    assert plan_items(arguments) == [("Read", "done"), ("Fix", "in_progress")]


def test_a_cancelled_step_leaves_the_plan_and_a_call_without_a_list_writes_none() -> None:
    todos = [{"description": "Old idea", "status": "cancelled"}, {"title": "New", "status": "todo"}]
    assert plan_items({"todos": todos}) == [("New", "pending")]
    assert plan_items({"command": "view"}) is None
    assert plan_items({"task_list": [{"title": " ", "text": "Fix", "status": "done"}]}) == [
        ("Fix", "done")
    ]
