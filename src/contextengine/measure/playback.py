"""Playing a recorded run back through the real agent: the model and the tools, replayed.

``ReplayProvider`` answers main requests with the recorded assistant turns in order and
side calls (compaction summaries, 3-strike reboots) with fixed templates; ``RecordedTools``
answers each tool call with the recorded observation. Both read one ``ReplayScript``.

Rounds: each recorded ``user`` message starts a new round (``Agent.stream``). A round whose
recording has no more turns (it ended on tool calls, or the engine asks again after a final
answer it found too short) is closed by ``RoundInterrupted``: the loop ends the round
without appending anything, as the recorded run got no reply there either. Such a request
is not charged: no recorded step answered it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from contextengine.compress.compaction import SUMMARY_HEADING
from contextengine.compress.compressors import tool_category
from contextengine.context.request import Request
from contextengine.errors import ProviderError
from contextengine.measure.accounting import CacheAccountant, CallCost
from contextengine.measure.summaries import identifier_summary
from contextengine.measure.trajectory import RecordedStep, Trajectory, written_action
from contextengine.prices import CachePolicy
from contextengine.providers.base import StreamingProvider
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.classify import exit_statuses, without_exit_statuses
from contextengine.toolkit.command_line import answered_no
from contextengine.toolkit.mask import ToolMask
from contextengine.toolkit.spec import ToolSpec
from contextengine.toolkit.traits import UNDECLARED, ToolTraits
from contextengine.tools.context import ToolContext
from contextengine.tools.todo import TODO_TOOL_NAMES, plan_items
from contextengine.types import (
    Message,
    ModelReply,
    ReplyDone,
    ReplyEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from contextengine.untrusted import JSONObject

_EMPTY_ELEMENT = re.compile(r"<(\w+)>\s*</\1>")
# the labelled lines other harnesses put around what a command printed: Codex's
# ``Wall time: 0.1 seconds`` and ``Output:``, Gemini CLI's ``Command: ...``,
# ``Directory: (root)``, ``Output: (empty)``, ``Error: (none)``, ``Signal: (none)`` ...
# OpenHands' ``[Python Interpreter: /usr/bin/python]`` and shell prompt (``root@host:/w # ``)
_SHELL_LABEL = re.compile(
    r"^(?:Wall time|Total output lines|Command|Directory|Signal|Background PIDs"
    r"|Process Group PGID): .*$"
    r"|^(?:Output|Error|Stdout|Stderr):[ \t]*(?:\((?:empty|none)\))?[ \t]*$"
    r"|\[Python Interpreter: [^\]\n]*\]|^[\w.-]+@[\w.-]+:[^\n]*[#$][ \t]*$",
    re.M | re.I,
)

PSEUDO_TOOL = "observation"
SHARED_OBSERVATION = "(the output of this call is included in the first result of this step)"
SUMMARY_FALLBACK_TOKENS = 2_000  # an instruction that states no budget
_QUOTED = re.compile(r"«(.*?)»", re.S)
_BUDGET = re.compile(r"Stay under ([\d,]+) tokens")
REBOOT_ANSWER = """\
3. What went wrong: the last attempts failed the same way; the error output above says why.
4. What to try differently: re-read the failing code and the full error before the next change.
5. Human help: not needed yet; continuing with the plan."""

_PLAN_TRAITS = ToolTraits(category="plan", compressor="todo")


class RoundInterrupted(ProviderError):
    """The recording has no further reply in this round; the round ends here."""


@dataclass(frozen=True)
class Round:
    """One user turn of the recording: its message and its steps ``[start, end)``."""

    user: str
    start: int
    end: int


@dataclass(frozen=True)
class ReplayCall:
    """One charged model call: the request, the reply given, and its cost.

    ``step`` is the recorded step that answered a main request (``None`` for side calls);
    ``after_step`` is the last step answered before this call (-1 before the first).
    """

    request: Request
    reply: ModelReply
    cost: CallCost
    step: int | None
    after_step: int


def split_rounds(trajectory: Trajectory) -> list[Round]:
    """The rounds of a recording: the task, then one per step that carries ``user``."""
    rounds: list[Round] = []
    user, start = trajectory.task, 0
    for j, step in enumerate(trajectory.steps):
        if step.user is not None:
            rounds.append(Round(user, start, j))
            user, start = step.user, j
    rounds.append(Round(user, start, len(trajectory.steps)))
    return rounds


class ReplayScript:
    """Where the replay is: the round being played and the next recorded step."""

    def __init__(self, trajectory: Trajectory) -> None:
        self.trajectory = trajectory
        self.rounds = split_rounds(trajectory)
        self.position = 0
        self.current: int | None = None
        self._round_end = 0
        self._calls_done = 0

    def begin(self, round_: Round) -> None:
        """Start playing ``round_``."""
        self.position, self._round_end = round_.start, round_.end

    def take_step(self) -> int | None:
        """The next recorded step of this round (now current), or ``None`` when none is left."""
        if self.position >= self._round_end:
            return None
        self.current, self.position = self.position, self.position + 1
        self._calls_done = 0
        return self.current

    def ends_round(self, step: int) -> bool:
        """Whether ``step`` is the last recorded step of its round."""
        return step + 1 == self._round_end

    def take_observation(self) -> ToolOutcome:
        """What the current step's next tool call returns: the recorded observation for
        the first call, a pointer to it for the parallel calls after it."""
        if self.current is None:
            raise ProviderError("replay: a tool ran before any recorded step was played")
        step = self.trajectory.steps[self.current]
        first = self._calls_done == 0
        self._calls_done += 1
        if not first:
            return ToolOutcome.ok(SHARED_OBSERVATION)
        return ToolOutcome("error" if step.is_error else "success", step.observation)


def step_calls(step: RecordedStep, ends_round: bool) -> tuple[tuple[str, str], ...]:
    """``(name, arguments_json)`` of the calls a step makes in the replay.

    Recorded calls as they are. A step without calls whose observation must still follow
    (it has one, or its round goes on) gets one pseudo call, parsed from its text when the
    text holds an action. A step without calls that ends its round is a final answer.
    """
    if step.tool_calls:
        return tuple((c.name, c.arguments_json) for c in step.tool_calls)
    if ends_round and not step.observation:
        return ()
    written = written_action(step.assistant)
    return (written,) if written is not None else ((PSEUDO_TOOL, "{}"),)


def output_text(step: RecordedStep) -> list[str]:
    """The texts of a step that the model produced as output (text, call names, arguments)."""
    texts = [step.assistant]
    for call in step.tool_calls:
        texts += [call.name, call.arguments_json]
    return texts


class ReplayProvider(StreamingProvider):
    """Plays the recorded assistant turns and charges every request it answers."""

    def __init__(
        self,
        script: ReplayScript,
        accountant: CacheAccountant,
        *,
        model: str = "replay",
        on_step: Callable[[int], None] | None = None,
        priced_as: str | None = None,
    ) -> None:
        self.model = model
        self.script = script
        self.accountant = accountant
        self.calls: list[ReplayCall] = []
        self._on_step = on_step
        self._last_step = -1
        self._priced_as = priced_as

    @property
    def cache_policy(self) -> CachePolicy:
        """The cache prices of the model the replay charges (``priced_as``, else ``model``)."""
        return CachePolicy.of_model(self._priced_as or self.model, self.cache_lifetime_s)

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Answer ``request`` from the recording (a main request) or a template (a side call)."""
        count = self.accountant.counter.count
        step: int | None = None
        if request.purpose == "main":
            step = self.script.take_step()
            if step is None:
                raise RoundInterrupted("replay: no recorded reply left in this round")
            reply = self._step_reply(step)
            output = sum(count(t) for t in output_text(self.script.trajectory.steps[step]))
        else:
            reply = ModelReply(content=self._side_answer(request))
            output = count(reply.content)
        cost = self.accountant.charge(request, output)
        self.calls.append(ReplayCall(request, reply, cost, step, self._last_step))
        if step is not None:
            self._last_step = step
            if self._on_step is not None:
                self._on_step(step)
        usage = Usage(
            input_tokens=cost.input_tokens,
            cached_tokens=cost.cached_tokens,
            cache_write_tokens=cost.cache_write_tokens,
            output_tokens=output,
            model=self.model,
        )
        if reply.content:
            yield TextDelta(reply.content)
        yield ReplyDone(replace(reply, usage=usage))

    def _step_reply(self, j: int) -> ModelReply:
        step = self.script.trajectory.steps[j]
        calls = tuple(
            ToolCall(f"replay_{j}_{k}", name, arguments)
            for k, (name, arguments) in enumerate(step_calls(step, self.script.ends_round(j)))
        )
        return ModelReply(
            content=step.assistant,
            tool_calls=calls,
            reasoning=step.reasoning,
            finish_reason="tool_calls" if calls else "stop",
            # the recorded run ended its round here, in whatever protocol it spoke
            ends_turn=not calls,
        )

    def _side_answer(self, request: Request) -> str:
        if request.purpose == "summary":
            return compaction_summary(request, self.accountant.counter.count)
        return REBOOT_ANSWER


def compaction_summary(request: Request, count: Callable[[str], int]) -> str:
    """The engine's compaction summary, simulated as every policy's is
    (``measure.summaries``): the identifiers of the span the instruction (the request's
    last message) names as archived, up to the message that begins with its «quote»,
    within the tokens it asks to stay under."""
    instruction = str(request.messages[-1].get("content") or "")
    history = list(request.messages[1:-1])
    quoted = _QUOTED.search(instruction)
    budget = _BUDGET.search(instruction)
    end = len(history)
    if quoted is not None:
        found = [k for k, m in enumerate(history) if _opening(m).startswith(quoted.group(1))]
        end = found[-1] + 1 if found else end
    limit = int(budget.group(1).replace(",", "")) if budget else SUMMARY_FALLBACK_TOKENS
    return identifier_summary(SUMMARY_HEADING, history[:end], count, limit)


def _opening(message: Message) -> str:
    """A message's content as the summary instruction quotes it (whitespace collapsed)."""
    return " ".join(str(message.get("content") or "").split())


class RecordedTools:
    """The Toolset interface over a recording: each call returns the recorded observation."""

    def __init__(self, trajectory: Trajectory, script: ReplayScript) -> None:
        self._specs = list(trajectory.tool_specs)
        self._script = script

    @property
    def names(self) -> tuple[str, ...]:
        """The declared tool names, sorted."""
        return tuple(s.name for s in self._specs)

    def specs(self) -> list[ToolSpec]:
        """The declared tools, as the recorded run showed them to its model."""
        return list(self._specs)

    def traits(self, name: str) -> ToolTraits:
        """A recorded tool is another harness's, known by its name: a todo tool
        (``TodoWrite``, ``write_todos`` ...) is the plan's, every other one ``UNDECLARED``."""
        return _PLAN_TRAITS if name.lower() in TODO_TOOL_NAMES else UNDECLARED

    def execute(
        self, call: ToolCall, ctx: ToolContext, mask: ToolMask | None = None
    ) -> ToolOutcome:
        """The recorded observation of the current step (the recording is the truth, so
        masks are not applied)."""
        outcome = self._script.take_observation()
        arguments = call.arguments_or_empty()
        if outcome.status == "error" and _recorded_no(call.name, arguments, outcome.text):
            outcome = ToolOutcome.ok(outcome.text)
        if call.name.lower() in TODO_TOOL_NAMES and (items := plan_items(arguments)) is not None:
            # the list the recorded model wrote becomes the plan, as todo_write's would
            todos = [{"content": c, "status": s} for c, s in items]
            return replace(outcome, data={**outcome.data, "todos": todos})
        if tool_category(call.name, arguments) == "read":
            return replace(outcome, kind="file")
        return outcome


def _recorded_no(tool_name: str, arguments: JSONObject, text: str) -> bool:
    """Whether a recorded failed shell call is what ``shell_exec`` counts a success
    (``answered_no``): its observation holds one exit status, and around it only empty
    wrappers, a harness's labelled lines and prompt, the command's echo and what the
    command printed."""
    command = arguments.get("command")
    if isinstance(command, list) and command:
        command = command[-1]  # Codex's ``["bash", "-lc", "grep ..."]``
    if tool_category(tool_name, arguments) != "shell" or not isinstance(command, str):
        return False
    codes = exit_statuses(text)
    printed = _SHELL_LABEL.sub("", _EMPTY_ELEMENT.sub("", without_exit_statuses(text)))
    printed = printed.strip().removeprefix(command.strip())  # a terminal's echo of it
    return len(codes) == 1 and answered_no(command, codes[0], printed)
