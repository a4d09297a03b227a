"""Kill-9 driver for ``test_kill_resume.py``: run scripted sessions, kill them, resume them.

``python kill_driver.py WORK_DIR SPEC_JSON`` imports contextengine once, then for each kill
point forks a child that runs a scenario and SIGKILLs itself just before its Nth
``os.write``/``os.fsync`` (or is SIGKILLed by the driver after a delay), then forks a fresh
child that resumes the session and finishes the work with a model that heeds the
"interrupted" results. Forking from a process that never ran an agent keeps each child's
start cheap while sharing no state with the killed one (the token counter, word list and
price table are loaded before the first fork too). One JSON line per point on stdout.

Every operation leaves its own mark: ``shell`` ops append ``done-<op>`` to ``shell.log``,
``write`` ops write ``out/<op>.txt``; the toolset also appends each execution's op to
``executions.log`` before running it.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextengine import Agent, Config, ScriptedProvider, Session
from contextengine.compress.topic import load_word_frequencies
from contextengine.context.request import Request
from contextengine.context.tokens import shared_counter
from contextengine.prices import load_price_table
from contextengine.session.entries import AssistantEntry, ToolResultEntry
from contextengine.session.interrupted import MAY_HAVE_RUN, NOT_RUN
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.mask import ToolMask
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import Toolset, default_toolset
from contextengine.types import ToolCall

SESSION_ID = "killed-session"
OP = re.compile(r"done-(op\d\d)")
RESUME_MESSAGE = "The agent was restarted. Finish the operations that are not done yet."


@dataclass(frozen=True)
class Op:
    """One side effect the scenario asks for."""

    id: str
    kind: str  # "shell" or "write"

    def call(self) -> dict[str, Any]:
        """The scripted tool call that performs it."""
        if self.kind == "shell":
            return {
                "name": "shell_exec",
                "arguments": {"command": f"echo done-{self.id} >> shell.log"},
            }
        return {
            "name": "file_write",
            "arguments": {"path": f"out/{self.id}.txt", "content": f"done-{self.id}\n"},
        }

    def check(self) -> dict[str, Any]:
        """The call a careful model makes to see whether it already happened."""
        path = "shell.log" if self.kind == "shell" else f"out/{self.id}.txt"
        return {"name": "file_read", "arguments": {"path": path}}


@dataclass(frozen=True)
class Scenario:
    """User turns, each a list of batches (one model reply each) of ops."""

    name: str
    turns: tuple[tuple[tuple[Op, ...], ...], ...]
    flags: tuple[tuple[str, bool], ...] = ()

    @property
    def ops(self) -> list[Op]:
        """Every op, in the order the script issues them."""
        return [op for turn in self.turns for batch in turn for op in batch]

    def script(self) -> list[dict[str, Any]]:
        """The scripted replies of the uninterrupted run."""
        replies: list[dict[str, Any]] = []
        for turn in self.turns:
            for batch in turn:
                replies.append({"content": "Working.", "tool_calls": [op.call() for op in batch]})
            replies.append({"content": "These operations are done now."})
        return replies

    def config(self, root: Path) -> Config:
        """Settings of both processes (sessions kept outside the workspace)."""
        return Config(root=str(root), **dict(self.flags))


def _ops(spec: str) -> tuple[Op, ...]:
    return tuple(
        Op(f"op{n}", "shell" if kind == "s" else "write")
        for n, kind in (part.split(":") for part in spec.split())
    )


SCENARIOS = {
    "mixed": Scenario(
        "mixed",
        (
            (_ops("01:w"), _ops("02:s 03:w"), _ops("04:s 05:s 06:w")),
            (_ops("07:w 08:s"),),
        ),
    ),
    "lean": Scenario(
        "lean",
        ((_ops("11:s 12:w 13:s"), _ops("14:w")), (_ops("15:s"), _ops("16:w 17:w"))),
        flags=(("working_memory", False), ("reminders", False), ("recitation", False)),
    ),
}


class CountingToolset(Toolset):
    """The default tools; every execution of an op is counted before it runs."""

    def __init__(self, counter: Path) -> None:
        tools = default_toolset()
        super().__init__([tools.get(name) for name in tools.names])  # type: ignore[misc]
        self._counter = counter

    def execute(
        self, call: ToolCall, ctx: ToolContext, mask: ToolMask | None = None
    ) -> ToolOutcome:
        """Count, then run."""
        found = OP.search(call.arguments_json)
        if found:
            with open(self._counter, "a", encoding="utf-8") as fh:
                fh.write(found.group(1) + "\n")
        return super().execute(call, ctx, mask)


@dataclass(frozen=True)
class Paths:
    """The files of one kill point."""

    base: Path

    @property
    def workspace(self) -> Path:
        """The agent's workspace."""
        return self.base / "ws"

    @property
    def root(self) -> Path:
        """The sessions root (outside the workspace)."""
        return self.base / "sessions"

    @property
    def session(self) -> Path:
        """The session folder."""
        return self.root / "default" / "default" / "ws" / SESSION_ID

    @property
    def log(self) -> Path:
        """The session log."""
        return self.session / "session.jsonl"

    @property
    def executions(self) -> Path:
        """One line per op execution, written before it runs."""
        return self.base / "executions.log"

    @property
    def witness(self) -> Path:
        """The log's size after each fsync: what was durable."""
        return self.base / "fsynced.txt"


def arm(kill_at: int, witness: Path) -> Callable[[], int]:
    """Count os.write/os.fsync calls, SIGKILL this process just before number ``kill_at``.

    After each fsync of the session log its size goes to ``witness``: what was durable.
    """
    real_write, real_fsync = os.write, os.fsync
    wfd = os.open(witness, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    count = 0

    def tick() -> None:
        nonlocal count
        count += 1
        if count == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def write(fd: int, data: Any) -> int:
        tick()
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        tick()
        real_fsync(fd)
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return
        if name.endswith("/session.jsonl"):
            real_write(wfd, f"{os.fstat(fd).st_size}\n".encode())

    os.write, os.fsync = write, fsync  # type: ignore[assignment]
    return lambda: count


def run_scenario(scenario: Scenario, paths: Paths, kill_at: int) -> int:
    """The uninterrupted session (until the kill); returns how many writes/fsyncs it made."""
    paths.workspace.mkdir(parents=True, exist_ok=True)
    counted = arm(kill_at, paths.witness)
    agent = Agent(
        ScriptedProvider(scenario.script()),
        paths.workspace,
        scenario.config(paths.root),
        session_id=SESSION_ID,
        tools=CountingToolset(paths.executions),
    )
    for number in range(len(scenario.turns)):
        result = agent.run(f"Part {number + 1}: do the operations.")
        assert result.status == "completed", result
    return counted()


def unanswered(messages: Sequence[dict[str, Any]]) -> list[str]:
    """Problems a provider would reject: a tool call without its result right after it,
    or a result without its call."""
    problems = []
    open_ids: set[str] = set()
    for position, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_ids:
                problems.append(f"message {position}: result for {call_id!r} without its call")
            open_ids.discard(call_id)
            continue
        if open_ids:
            problems.append(f"message {position}: calls {sorted(open_ids)} have no result")
            open_ids = set()
        if role == "assistant":
            open_ids = {c["id"] for c in message.get("tool_calls") or ()}
    if open_ids:
        problems.append(f"end: calls {sorted(open_ids)} have no result")
    return problems


class FinishingModel:
    """The model after the restart: re-issues what was not run, checks what may have run,
    issues what was never asked for, one call per reply; checks every request it gets."""

    def __init__(self, ops: Sequence[Op]) -> None:
        self.ops = list(ops)
        self.problems: list[str] = []
        self.checking: Op | None = None
        self.checked: set[str] = set()
        self.already_done: set[str] = set()

    def __call__(self, request: Request) -> dict[str, Any]:
        messages = request.messages
        self.problems += unanswered(messages)
        if self.checking is not None:
            last = max(k for k, m in enumerate(messages) if m.get("role") == "assistant")
            after = "\n".join(str(m.get("content") or "") for m in messages[last + 1 :])
            if f"done-{self.checking.id}" in after:
                self.already_done.add(self.checking.id)
            self.checking = None
        results = _last_results(messages)
        for op in self.ops:
            result = results.get(op.id)
            if result is None or NOT_RUN in result:
                return {"content": "", "tool_calls": [op.call()]}
            if MAY_HAVE_RUN in result and op.id not in self.already_done:
                if op.id in self.checked:
                    return {"content": "", "tool_calls": [op.call()]}
                self.checking = op
                self.checked.add(op.id)
                return {"content": "Checking first.", "tool_calls": [op.check()]}
        return {"content": "Every operation is done now."}


def _last_results(messages: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Op id -> content of the result of its latest call."""
    op_of: dict[str, str] = {}
    results: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            found = OP.search(call["function"]["arguments"])
            if found:
                op_of[call["id"]] = found.group(1)
        if message.get("role") == "tool" and message.get("tool_call_id") in op_of:
            results[op_of[message["tool_call_id"]]] = str(message.get("content"))
    return results


def resume_and_finish(scenario: Scenario, paths: Paths) -> dict[str, Any]:
    """A fresh process after the kill: resume (or create, when no session was left) and
    finish the work; what the requests and the session showed."""
    model = FinishingModel(scenario.ops)
    provider = ScriptedProvider(model)
    config = scenario.config(paths.root)
    tools = CountingToolset(paths.executions)
    resumed = paths.log.exists()
    if resumed:
        agent = Agent.resume(paths.session, provider, config, tools=tools)
    else:
        agent = Agent(provider, paths.workspace, config, session_id=SESSION_ID, tools=tools)
    closed = [
        r.entry.content
        for r in agent.session.records
        if isinstance(r.entry, ToolResultEntry) and r.entry.content in (MAY_HAVE_RUN, NOT_RUN)
    ]
    result = agent.run(RESUME_MESSAGE)
    return {
        "resumed": resumed,
        "status": result.status,
        "requests": len(provider.requests),
        "problems": model.problems,
        "may_have_run": sum(MAY_HAVE_RUN in c for c in closed),
        "not_run": sum(NOT_RUN in c for c in closed),
    }


def verify(scenario: Scenario, paths: Paths, durable: bytes, exact: bool) -> list[str]:
    """After the resumed run: nothing durable lost, nothing run twice unasked, all done."""
    failures = []
    data = paths.log.read_bytes()
    if not data.startswith(durable):
        failures.append("the log lost or changed bytes that were fsynced before the kill")
    records = Session.open(paths.session).records
    asked: Counter[str] = Counter()
    for record in records:
        if isinstance(record.entry, AssistantEntry):
            for call in record.entry.tool_calls:
                found = OP.search(call.arguments_json)
                if found:
                    asked[found.group(1)] += 1
    executed = Counter(paths.executions.read_text(encoding="utf-8").split())
    for op, times in executed.items():
        if times > asked[op]:
            failures.append(f"{op} ran {times} times but was asked for {asked[op]} times")
    shell = Counter(OP.findall(_read(paths.workspace / "shell.log")))
    for op in scenario.ops:
        if op.kind == "shell":
            done = shell[op.id]
        else:
            done = int(_read(paths.workspace / "out" / f"{op.id}.txt") == f"done-{op.id}\n")
        if done == 0 or (exact and done > 1):
            failures.append(f"{op.id} took effect {done} times")
    return failures


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _fork(work: Callable[[], Any], out: Path) -> int:
    """Run ``work`` in a child process; it writes its JSON result to ``out``."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            value = work()
        except BaseException:
            value, code = {"error": traceback.format_exc()}, 1
        out.write_text(json.dumps(value), encoding="utf-8")
        os._exit(code)
    return pid


def _durable_prefix(paths: Paths) -> bytes:
    sizes = _read(paths.witness).split()
    if not sizes or not paths.log.exists():
        return b""
    return paths.log.read_bytes()[: int(sizes[-1])]


def run_point(scenario: Scenario, base: Path, kill_at: int, delay: float | None) -> dict[str, Any]:
    """Kill one run (at write/fsync ``kill_at``, or after ``delay`` seconds), resume, verify."""
    paths = Paths(base)
    base.mkdir(parents=True)
    started = time.perf_counter()
    pid = _fork(lambda: run_scenario(scenario, paths, kill_at), base / "first.json")
    if delay is not None:
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    first_s = time.perf_counter() - started
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    if not killed and os.waitstatus_to_exitcode(status) != 0:
        return {"failures": [f"the first run failed: {_read(base / 'first.json')}"]}
    durable = _durable_prefix(paths)
    pid = _fork(lambda: resume_and_finish(scenario, paths), base / "resumed.json")
    os.waitpid(pid, 0)
    outcome = json.loads(_read(base / "resumed.json") or '{"error": "no result"}')
    outcome["killed"] = killed
    outcome["first_s"] = round(first_s, 3)
    failures = []
    if "error" in outcome:
        failures.append(f"the resumed run failed: {outcome['error']}")
    else:
        failures += outcome.pop("problems")
        if outcome["status"] != "completed":
            failures.append(f"the resumed run ended {outcome['status']}")
        failures += verify(scenario, paths, durable, exact=delay is None)
    outcome["failures"] = failures
    return outcome


def main(work_dir: str, spec_json: str) -> None:
    """Run the points of the spec: ``{"scenario": name, "hooked": [N ...], "random": count,
    "seed": int}``: hooked points (default: every write/fsync of the reference run and one
    past its end), then ``random`` kills at delays within the reference run's duration."""
    spec = json.loads(spec_json)
    # The token counter's BPE tables, wordfreq's word list and the price table take a second or
    # more to load: loaded here, before any fork, each child inherits them instead of loading
    # them again (twice per point).
    shared_counter()
    load_word_frequencies()
    load_price_table()
    scenario = SCENARIOS[spec["scenario"]]
    work = Path(work_dir)
    reference = run_point(scenario, work / "reference", 0, None)
    # A second uninterrupted run times the session without first-use costs (bytecode).
    took = min(reference["first_s"], run_point(scenario, work / "timing", 0, None)["first_s"])
    events = json.loads(_read(work / "reference" / "first.json"))
    print(json.dumps({"point": "reference", "events": events, **reference}), flush=True)
    rng = random.Random(spec.get("seed", 0))
    hooked = spec["hooked"] if "hooked" in spec else range(1, events + 2)
    points: list[tuple[int, float | None]] = [(n, None) for n in hooked]
    points += [(0, rng.uniform(0, took)) for _ in range(spec.get("random", 0))]
    for k, (kill_at, delay) in enumerate(points):
        outcome = run_point(scenario, work / f"p{k}", kill_at, delay)
        print(
            json.dumps({"point": kill_at if delay is None else f"after {delay:.3f}s", **outcome}),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
