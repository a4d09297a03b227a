"""pydantic-ai on the task: ``driver.py BASE_URL WORKSPACE default|compact|contextengine``.

``compact`` adds a ``ProcessHistory`` capability that, once the last request's prompt
(the provider's ``input_tokens``) passes ``COMPACT_AT_TOKENS``, asks the model for a summary of all
but the last ``KEEP_MESSAGES`` messages and puts it after the task (pydantic-ai's documented
way to compact; its processed history replaces the run's history). ``contextengine`` adds
contextengine's pydantic-ai integration (``contextengine.integrations.pydantic_ai``), its
session kept in a folder beside the workspace.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fwbench import task
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, UserPromptPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

COMPACT_AT_TOKENS = 4000
KEEP_MESSAGES = 6
SUMMARY_PROMPT = (
    "Summarize the conversation so far for your own later use: keep file names, commands, "
    "errors and decisions."
)


def _prompt_tokens(messages: list[ModelMessage]) -> int:
    """The provider's prompt size for the newest response in ``messages``."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return message.usage.input_tokens
    return 0


def compactor(model: OpenAIChatModel) -> Any:
    """A history processor that replaces old messages with a model-written summary."""
    summarizer = Agent(model, instructions=SUMMARY_PROMPT)
    first: list[ModelRequest] = []

    async def compact(ctx: RunContext[None], messages: list[ModelMessage]) -> list[ModelMessage]:
        if not first:
            first.append(messages[0])  # the task as the user gave it
        if _prompt_tokens(messages) < COMPACT_AT_TOKENS or len(messages) <= KEEP_MESSAGES + 1:
            return messages
        cut = len(messages) - KEEP_MESSAGES
        while cut > 1 and not isinstance(messages[cut], ModelResponse):
            cut -= 1  # never separate a tool return from its call
        if cut <= 1:
            return messages
        summary = await summarizer.run(SUMMARY_PROMPT, message_history=messages[:cut])
        head = ModelRequest(
            parts=[*first[0].parts, UserPromptPart(f"Summary of earlier work:\n{summary.output}")]
        )
        return [head, *messages[cut:]]

    return compact


def main() -> None:
    """Run the task once and print the final answer as JSON."""
    base_url, workspace, mode = sys.argv[1:4]
    model = OpenAIChatModel(
        "fake-model", provider=OpenAIProvider(base_url=base_url, api_key="sk-fake")
    )
    capabilities: list[Any] = []
    if mode == "compact":
        capabilities.append(ProcessHistory(compactor(model)))
    elif mode == "contextengine":
        from contextengine.integrations.mirror import ContextMirror
        from contextengine.integrations.pydantic_ai import ContextEngine

        capabilities.append(ContextEngine(ContextMirror(f"{workspace}.ce")))
    agent = Agent(
        model,
        instructions=task.INSTRUCTIONS,
        tools=task.tool_functions(task.Workspace(workspace)),
        capabilities=capabilities,
    )
    result = agent.run_sync(task.TASK)
    print(json.dumps({"final": result.output}))


if __name__ == "__main__":
    main()
