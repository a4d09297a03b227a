"""Mode presets (R15) and the state rules over them (pure Python)."""

from __future__ import annotations

from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from contextengine import MODES, ConfigError, ToolMask
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.modes import MODE_NAMES, MaskRules, mode_mask, mode_of
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.code_map import with_code_map
from contextengine.tools.context import ToolContext
from contextengine.tools.memory import with_memory_tools
from contextengine.tools.registry import Toolset, default_toolset

# Today's tools, the memory tools, and tools other parts add later: prefixes place them.
TOOLS = (
    "agent_delegate",
    "code_map",
    "file_delete",
    "file_edit",
    "file_glob",
    "file_grep",
    "file_ls",
    "file_read",
    "file_write",
    "memory_finding_add",
    "memory_plan_update",
    "shell_exec",
    "todo_write",
    "web_fetch",
    "web_search",
)
READ = {"code_map", "file_glob", "file_grep", "file_ls", "file_read"}
MEMORY = {"memory_finding_add", "memory_plan_update"}

EXPECTED = {
    "CHAT": set(),
    "CODE": {"file_delete", "file_edit", "file_write", "shell_exec", "todo_write"} | READ | MEMORY,
    "SEARCH": {"web_fetch", "web_search", "todo_write"} | MEMORY,
    "THINKING": {"todo_write", "web_search"} | READ | MEMORY,
    "KNOWLEDGE": {"web_search"} | READ | MEMORY,
    "DEEP_RESEARCH": set(TOOLS),
}


def test_the_six_presets_are_named_as_in_the_seed() -> None:
    assert (
        tuple(MODES)
        == MODE_NAMES
        == (
            "CHAT",
            "CODE",
            "SEARCH",
            "THINKING",
            "KNOWLEDGE",
            "DEEP_RESEARCH",
        )
    )


@pytest.mark.parametrize("name", MODE_NAMES)
def test_each_preset_allows_its_groups_and_lets_the_model_answer(name: str) -> None:
    tools = with_code_map(with_memory_tools(default_toolset()))
    mask = MaskRules(enabled=True, tools=tools).in_force(MODES[name])
    assert mask is not None and set(mask.allowed_names(TOOLS)) == EXPECTED[name]
    assert mask.mode == "auto"


def test_presets_are_read_only() -> None:
    with pytest.raises(TypeError):
        MODES["CHAT"] = ToolMask()  # type: ignore[index]


def test_thinking_and_knowledge_change_and_run_nothing() -> None:
    for name in ("THINKING", "KNOWLEDGE"):
        assert not {"file_write", "file_edit", "file_delete", "shell_exec"} & set(
            MODES[name].allowed_names(TOOLS)
        )


def test_mode_names_resolve_in_any_case_and_unknown_ones_list_the_six() -> None:
    assert mode_mask("code") is MODES["CODE"]
    assert mode_mask(" Deep_Research ") is MODES["DEEP_RESEARCH"]
    with pytest.raises(ConfigError) as caught:
        mode_mask("PLAN")
    message = str(caught.value)
    assert "unknown mode 'PLAN'" in message
    assert all(name in message for name in MODE_NAMES)
    assert "\n" not in message


def test_mode_of_names_presets_only() -> None:
    assert mode_of(MODES["SEARCH"]) == "SEARCH"
    assert mode_of(ToolMask(("web_", "todo_", "memory_"))) == "SEARCH"  # equal value
    assert mode_of(ToolMask.only("file_read")) is None
    assert mode_of(None) is None


def todo_outcome(*statuses: str) -> ToolOutcome:
    todos = [{"content": f"step {k}", "status": s} for k, s in enumerate(statuses)]
    return ToolOutcome.ok("Todo list updated.", {"todos": todos})


def test_a_finished_plan_lets_a_call_requiring_mask_answer() -> None:
    rules = MaskRules(enabled=True, tools=default_toolset())
    required = ToolMask.only("file_", "todo_")  # mode "specified"
    assert rules.in_force(required) == required
    rules.observe("todo_write", todo_outcome("done", "in_progress"))
    assert rules.in_force(required) == required
    rules.observe("todo_write", todo_outcome("done", "done"))
    assert rules.in_force(required) == ToolMask(("file_", "todo_"), "auto")
    rules.observe("file_read", todo_outcome("pending"))  # only todo_write speaks for the plan
    assert rules.in_force(required).mode == "auto"
    rules.observe("todo_write", ToolOutcome.fail("invalid_arguments", "bad"))  # no change
    assert rules.in_force(required).mode == "auto"
    rules.observe("todo_write", todo_outcome("done", "pending"))
    assert rules.in_force(required) == required
    rules.observe("todo_write", todo_outcome())  # an empty list finishes nothing
    assert rules.in_force(required) == required


def test_masking_off_means_no_mask_at_all() -> None:
    rules = MaskRules(enabled=False, tools=default_toolset())
    assert rules.in_force(MODES["CHAT"]) is None
    assert rules.in_force(ToolMask.only("file_read")) is None


masks = st.builds(
    ToolMask,
    st.none() | st.lists(st.sampled_from([*TOOLS, "file_", "web_", "memory_"])).map(tuple),
    st.sampled_from(["auto", "required", "specified"]),
)


@given(mask=masks, statuses=st.lists(st.sampled_from(["pending", "in_progress", "done"])))
def test_state_rules_never_allow_a_tool_the_agents_mask_refuses(mask, statuses) -> None:
    rules = MaskRules(enabled=True, tools=default_toolset())
    rules.observe("todo_write", todo_outcome(*statuses))
    in_force = rules.in_force(mask)
    assert in_force is not None
    assert set(in_force.allowed_names(TOOLS)) == set(mask.allowed_names(TOOLS))


def test_the_default_toolset_has_a_tool_in_every_preset_but_chat() -> None:
    tools = default_toolset()
    rules = MaskRules(enabled=True, tools=tools)
    for name in MODE_NAMES:
        in_force = rules.in_force(MODES[name])
        assert in_force is not None
        assert bool(in_force.allowed_names(tools.names)) is (name != "CHAT")


class _Outline:
    """A new read tool: it declares category read and names no mode."""

    name: ClassVar[str] = "outline"
    description: ClassVar[str] = "Outline a file."
    traits: ClassVar[ToolTraits] = ToolTraits(category="read")

    class Args(BaseModel):
        path: str

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome.ok("outline")


def test_a_new_read_tool_is_allowed_where_reading_is_by_its_traits_alone() -> None:
    tools = Toolset([*(default_toolset().get(n) for n in default_toolset().names), _Outline()])
    rules = MaskRules(enabled=True, tools=tools)
    for mode in ("THINKING", "KNOWLEDGE"):
        allowed = rules.in_force(MODES[mode]).allowed_names(tools.names)
        assert {"outline", "file_read", "file_grep"} <= set(allowed)
        assert "file_write" not in allowed and "shell_exec" not in allowed
    assert "outline" not in rules.in_force(MODES["SEARCH"]).allowed_names(tools.names)
