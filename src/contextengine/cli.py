"""The ``contextengine`` command line."""

from __future__ import annotations

import shlex
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from enum import Enum, StrEnum
from importlib.metadata import version as package_version
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, get_args

import typer
from rich.console import Console

from contextengine.agent.events import Done, ErrorEvent, RunResult, UsageEvent
from contextengine.cli_printer import EventPrinter, JsonLinePrinter, context_table, cost_lines
from contextengine.codemap.command import codemap_command
from contextengine.config import Config
from contextengine.errors import ContextEngineError, ProviderConnectionError
from contextengine.measure.commands import replay_command, report_command
from contextengine.measure.inspect_commands import inspect_command, list_sessions
from contextengine.measure.profile_command import profile_command
from contextengine.prices import model_prices
from contextengine.providers.base import Provider
from contextengine.providers.factory import PROVIDER_NAMES
from contextengine.proxy.command import proxy_command
from contextengine.session.meta import ProviderChoice, SessionMeta, read_meta
from contextengine.session.store.choice import open_store
from contextengine.toolkit.modes import MODE_NAMES
from contextengine.types import ReasoningEffort
from contextengine.untrusted import terminal_safe, valid_text

if TYPE_CHECKING:
    from contextengine.agent.loop import Agent

try:  # typer 0.24+ carries its own click, whose exceptions derive from TyperException
    from typer import TyperException as UsageProblem
except ImportError:  # older typer raises click's own
    from click import ClickException as UsageProblem  # type: ignore[assignment]

app = typer.Typer(
    name="contextengine",
    help="Context engineering engine and agent harness: cache-stable requests, recitation, "
    "working memory, reversible compression and compaction.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)
PROG = "contextengine"


def _show_version(value: bool) -> None:
    if value:
        out.print(f"contextengine {package_version('contextengine')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit.", callback=_show_version),
    ] = False,
) -> None:
    """Context engineering engine and agent harness."""


PROVIDER_HELP = (
    "Provider: " + ", ".join(PROVIDER_NAMES) + " (local: --model is a GGUF path), or"
    " scripted:FILE (a JSON list of replies, for tests and demos)."
)

ProviderOption = Annotated[str, typer.Option("--provider", "-p", help=PROVIDER_HELP)]
ModelOption = Annotated[str | None, typer.Option("--model", "-m", help="Model name.")]
BaseUrlOption = Annotated[str | None, typer.Option(help="Server URL for self-hosted providers.")]
WorkspaceOption = Annotated[
    Path, typer.Option("--workspace", "-w", help="The folder the agent works in.")
]
TimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--timeout", help="Seconds a model call may wait for its next bytes (default 120)."
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        help="API key for the provider (a self-hosted server's --api-key; default: the "
        "CONTEXTENGINE_API_KEY setting, then OPENAI_API_KEY / ANTHROPIC_API_KEY).",
    ),
]
RetriesOption = Annotated[
    int | None,
    typer.Option("--retries", help="Retries of a failed or broken model call (default 2)."),
]
EffortChoice = Enum(  # type: ignore[misc]
    "EffortChoice", {name: name for name in get_args(ReasoningEffort)}, type=str
)
"""The reasoning effort levels as command-line choices."""
ModeChoice = Enum("ModeChoice", {name: name for name in MODE_NAMES}, type=str)  # type: ignore[misc]
"""The mode presets as command-line choices."""

StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Where sessions are kept: a folder, file://PATH or postgresql://... (setting store).",
    ),
]
BrokerOption = Annotated[
    str | None,
    typer.Option(
        help="Celery broker redis://HOST:PORT/DB: turns run on `contextengine worker`s "
        "(setting broker; needs a postgresql:// store)."
    ),
]
McpConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--mcp-config",
        help='MCP servers whose tools the agent may use: a JSON file {"mcpServers": {...}} '
        "(Claude Code's .mcp.json shape). Without it, .mcp.json at the workspace root is "
        "read (setting mcp_project_file = false turns that off).",
        exists=True,
        dir_okay=False,
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Config file (TOML or YAML).", exists=True, dir_okay=False),
]


class OutputFormat(StrEnum):
    """How ``run`` prints a turn: for a person, or one JSON event a line for scripts."""

    text = "text"
    stream_json = "stream-json"


MessageArgument = Annotated[
    str | None, typer.Argument(help="The task. Omit it for an interactive session.")
]
RunProviderOption = Annotated[
    str | None,
    typer.Option(
        "--provider",
        "-p",
        help=PROVIDER_HELP + " Default: openai, or the resumed session's own.",
    ),
]
ProtocolOption = Annotated[
    str, typer.Option(help="native (tool calling) or text (ReAct text protocol).")
]
ResumeOption = Annotated[Path | None, typer.Option(help="Continue the session in this folder.")]
ModeOption = Annotated[
    ModeChoice | None,
    typer.Option(
        help="Mode preset: which tools the agent may call (default: the config's mode, "
        "else every tool).",
        case_sensitive=False,
    ),
]
MaxTokensOption = Annotated[int | None, typer.Option(help="Most tokens a reply may have.", min=1)]
MaxStepsOption = Annotated[
    int | None,
    typer.Option(help="Most model calls a turn may make (setting max_steps, default 100).", min=1),
]
TemperatureOption = Annotated[
    float | None, typer.Option(help="Sampling temperature.", min=0, max=2)
]
EffortOption = Annotated[
    EffortChoice | None,
    typer.Option(help="Reasoning effort of reasoning models.", case_sensitive=False),
]
OutputFormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--output-format",
        help="text (for a terminal) or stream-json (one JSON event a line, for scripts).",
        case_sensitive=False,
    ),
]


@app.command()
def demo(
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace folder (default: a new temporary folder).")
    ] = None,
) -> None:
    """Run an offline scripted coding session through the real agent loop (no model needed)."""
    from contextengine.agent.loop import Agent
    from contextengine.demo import run_demo

    folder = workspace or Path(tempfile.mkdtemp(prefix="contextengine-demo-"))
    printer = EventPrinter(out)
    agent, events = run_demo(folder, lambda provider, ws: Agent(provider, ws, Config()))
    usages: list[UsageEvent] = []
    for event in events:
        printer(event)
        if isinstance(event, UsageEvent):
            usages.append(event)
    total_in = sum(u.input_tokens for u in usages)
    cached = sum(u.cached_tokens for u in usages)
    breaks = sum(1 for u in usages if u.cache_break)
    out.print(
        f"\n{len(usages)} model calls, {total_in:,} input tokens, {cached:,} served from the prefix "
        f"cache ({cached / max(total_in, 1):.0%}), {breaks} cache breaks."
    )
    out.print(f"Workspace: {folder}\nUsage log: {agent.session.layout.usage_log}")


@app.command()
def run(
    message: MessageArgument = None,
    provider: RunProviderOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    workspace: WorkspaceOption = Path("."),
    protocol: ProtocolOption = "native",
    resume: ResumeOption = None,
    config: ConfigOption = None,
    timeout: TimeoutOption = None,
    retries: RetriesOption = None,
    api_key: ApiKeyOption = None,
    mode: ModeOption = None,
    max_tokens: MaxTokensOption = None,
    max_steps: MaxStepsOption = None,
    temperature: TemperatureOption = None,
    reasoning_effort: EffortOption = None,
    store: StoreOption = None,
    mcp_config: McpConfigOption = None,
    output_format: OutputFormatOption = OutputFormat.text,
) -> None:
    """Run the agent on a task in a workspace (or chat with it interactively; /help lists
    the session's commands)."""
    if protocol not in ("native", "text"):
        raise ContextEngineError(f"--protocol must be 'native' or 'text', not {protocol!r}")
    options = {
        "api_key": api_key,
        "store": store,
        "max_steps": max_steps,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "reasoning_effort": reasoning_effort and reasoning_effort.value,
    }
    settings = _with_mcp(_settings(config, timeout, retries, **options), mcp_config)
    open_store(settings).check()
    if resume is not None and not resume.is_dir():
        raise ContextEngineError(f"{resume}: not a session folder")
    if resume is None:
        _check_workspace(workspace)
    # A resumed session chooses its recorded provider again; flags given here win.
    recorded = read_meta(resume) if resume is not None else None
    choice = (recorded.provider if recorded else ProviderChoice()).overridden(
        provider, model, base_url
    )
    name = choice.name or "openai"
    choice = replace(choice, name=name)
    agent = _run_agent(name, choice, settings, workspace, resume, protocol, mode and mode.value)
    printer: EventPrinter | JsonLinePrinter = (
        JsonLinePrinter(sys.stdout)
        if output_format is OutputFormat.stream_json
        else EventPrinter(out, model_prices(agent.provider.model))
    )
    with agent:
        _converse(agent, message, printer)


def _run_agent(
    name: str,
    choice: ProviderChoice,
    settings: Config,
    workspace: Path,
    resume: Path | None,
    protocol: str,
    mode: str | None,
) -> Agent:
    """The agent ``run`` drives, on provider ``name``: the session in ``resume`` continued,
    else a new one."""
    from contextengine.agent.loop import Agent

    chosen = _provider(name, choice.model or None, choice.base_url, settings)
    # A hand-over asks on the terminal; without one the turn ends and says how to answer.
    ask_human = _ask_on_terminal if sys.stdin.isatty() else None
    if resume is not None:
        return Agent.resume(resume, chosen, settings, mode=mode, ask_human=ask_human)
    return Agent(
        chosen,
        workspace,
        settings,
        protocol=protocol,  # type: ignore[arg-type]
        mode=mode,
        provider_choice=choice,
        ask_human=ask_human,
    )


def _converse(agent: Agent, message: str | None, printer: EventPrinter | JsonLinePrinter) -> None:
    """Run ``message`` as one turn (exit 130 when stopped), else read turns and slash
    commands from the prompt until it ends."""
    if message is not None:
        if _turn(agent, message, printer) is None:
            raise typer.Exit(130)
        return
    for text in _prompt_lines():
        if text.startswith("/"):
            _slash_command(text.strip(), agent, printer)
        else:
            _turn(agent, text, printer)


def _turn(agent: Agent, text: str, printer: EventPrinter | JsonLinePrinter) -> RunResult | None:
    """Run one turn through ``printer``; ``None`` when the user stopped it with Ctrl-C.

    A turn that ended in an error exits 1, or 2 when the model server cannot be reached
    (a wrong URL or a server not started: the error names the URL tried).
    """
    unreachable: str | None = None
    try:
        for event in agent.stream(text):
            printer(event)
            if isinstance(event, ErrorEvent) and event.error_class == "provider_unreachable":
                unreachable = event.message
            if isinstance(event, Done):
                if event.result.status == "error":
                    if unreachable is not None:
                        raise ProviderConnectionError(unreachable)
                    raise typer.Exit(1)
                return event.result
    except KeyboardInterrupt:
        printer.interrupted(agent.session_dir)
        return None
    raise ContextEngineError("the agent stopped without a result")


SLASH_HELP = {
    "/context": "what the next request holds, by part, in tokens and cached share",
    "/cost": "model calls, tokens, cache hits and cost of this session so far",
    "/compact": "compact the history now",
    "/plan": "show the task plan (task_plan.md)",
    "/help": "this list",
}


def _slash_command(line: str, agent: Agent, printer: EventPrinter | JsonLinePrinter) -> None:
    """Run an interactive session's ``/command``."""
    from contextengine.memory.working_memory import PLAN

    command = line.split()[0].lower()
    if command == "/context":
        out.print(context_table(agent.context_parts()))
    elif command == "/cost":
        priced = isinstance(printer, EventPrinter) and printer.prices is not None
        cost = printer.cost_usd if isinstance(printer, EventPrinter) and priced else None
        for text in cost_lines(agent.stats(), cost):
            out.print(text, markup=False)
    elif command == "/compact":
        for event in agent.compact():
            printer(event)
        printer.stop()
    elif command == "/plan":
        plan = agent.memory.read(PLAN).strip()
        out.print(terminal_safe(plan) if plan else "No plan yet.", markup=False)
    elif command == "/help":
        for name, help_text in SLASH_HELP.items():
            out.print(f"{name:<10} {help_text}", markup=False)
    else:
        out.print(f"unknown command {terminal_safe(command)}; /help lists them", markup=False)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port to listen on (0 picks a free one).", min=0, max=65535)
    ] = 8765,
    workspace: WorkspaceOption = Path("."),
    provider: ProviderOption = "openai",
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    config: ConfigOption = None,
    token: Annotated[
        str | None,
        typer.Option(help="API token (default: server_token from config, else a new one)."),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(help="Another Host name the server answers (repeatable)."),
    ] = None,
    timeout: TimeoutOption = None,
    retries: RetriesOption = None,
    api_key: ApiKeyOption = None,
    store: StoreOption = None,
    broker: BrokerOption = None,
    mcp_config: McpConfigOption = None,
) -> None:
    """Serve the HTTP API (SSE events) and the web UI for sessions in a workspace."""
    try:
        from contextengine.server import create_app
        from contextengine.server.run import run_server
    except ImportError as exc:
        raise ContextEngineError(
            "the server needs its extra: pip install 'contextengine[server]'"
        ) from exc

    settings = _with_mcp(
        _settings(config, timeout, retries, api_key=api_key, store=store, broker=broker),
        mcp_config,
    )
    _provider(provider, model, base_url, settings)  # a bad name, model or key fails now
    open_store(settings).check()  # and so does a store that cannot be reached
    application = create_app(
        workspace,
        lambda: _provider(provider, model, base_url, settings),
        settings,
        token=token,
        hosts=[host, *(allow_host or [])],
    )
    run_server(application, host, port, workspace.resolve())


@app.command()
def worker(
    store: StoreOption = None,
    broker: BrokerOption = None,
    provider: ProviderOption = "openai",
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    concurrency: Annotated[int, typer.Option(help="Turns run at once.", min=1)] = 4,
    config: ConfigOption = None,
    timeout: TimeoutOption = None,
    retries: RetriesOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Run turns that `serve --broker` replicas queue (needs a postgresql:// store).

    A session's turn uses the provider its session.json records; --provider, --model and
    --base-url are for sessions that record none (those the server made).
    """
    from contextengine.agent.loop import Agent
    from contextengine.workers.engine import run_worker
    from contextengine.workers.turns import shared_store

    settings = _settings(config, timeout, retries, api_key=api_key, store=store, broker=broker)
    shared_store(settings).check()  # a store that is not PostgreSQL or cannot be reached fails now
    _provider(provider, model, base_url, settings)

    def provider_for(meta: SessionMeta) -> Provider:
        recorded = meta.provider
        if recorded.name is None:
            return _provider(provider, model, base_url, settings)
        return _provider(recorded.name, recorded.model or None, recorded.base_url, settings)

    def resume(directory: Path, provider: Provider) -> Agent:
        return Agent.resume(directory, provider, settings)

    run_worker(settings, provider_for, resume, concurrency)


@app.command()
def models() -> None:
    """Print the providers and where the local model's GGUF file is (for -p local)."""
    from contextengine.local.default_model import INSTALL_HINT, default_gguf

    found = default_gguf()
    out.print(f"providers: {', '.join(PROVIDER_NAMES)}", markup=False)
    if found is None:
        out.print(
            f"local model: none installed; {INSTALL_HINT}, or pass -m FILE.gguf", markup=False
        )
    else:
        out.print(f"local model: {found}", markup=False)
        out.print(f"run it with: {PROG} run -p local -m {shlex.quote(str(found))}", markup=False)


app.command("replay")(replay_command)
app.command("report")(report_command)
app.command("inspect")(inspect_command)


@app.command("sessions")
def sessions_command(
    workspace: Annotated[
        Path, typer.Argument(help="The workspace whose sessions to list (default: here).")
    ] = Path("."),
    search: Annotated[
        str | None,
        typer.Option("--search", help="Only sessions whose id, title or messages hold Q."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Config file (TOML or YAML).", dir_okay=False),
    ] = None,
) -> None:
    """List a workspace's sessions, newest first: id, created, title, turns, cost."""
    list_sessions(workspace, Config.load(config), search, as_json)


app.command("profile")(profile_command)

app.command("proxy")(proxy_command)
app.command("codemap")(codemap_command)


def _settings(
    config: Path | None, timeout: float | None, retries: int | None, **options: object
) -> Config:
    """The config file's settings with the command line's ``--timeout`` / ``--retries``
    and other ``options`` (named like settings, given as ``--name``; ``None`` = not given)."""
    cli: dict[str, tuple[str, object]] = {
        "request_timeout_s": ("--timeout", timeout),
        "max_retries": ("--retries", retries),
    }
    cli.update({name: ("--" + name.replace("_", "-"), value) for name, value in options.items()})
    return Config.load(config, cli=cli)


def _with_mcp(settings: Config, mcp_config: Path | None) -> Config:
    """The settings with the servers of ``--mcp-config`` added (they win a name), which
    then stands instead of the workspace's ``.mcp.json``."""
    if mcp_config is None:
        return settings
    from contextengine.toolkit.mcp_servers import read_mcp_file

    servers = {**settings.mcp_servers, **read_mcp_file(mcp_config)}
    return settings.with_flags(mcp_servers=servers, mcp_project_file=False)


def _provider(name: str, model: str | None, base_url: str | None, settings: Config) -> Provider:
    """The provider ``name`` with the settings' timeout, retries, context window,
    generation and cache settings."""
    from contextengine.providers.factory import make_provider
    from contextengine.providers.scripted import scripted_from_file
    from contextengine.providers.wire import Generation

    if name.startswith("scripted:"):
        return scripted_from_file(Path(name.removeprefix("scripted:")))
    return make_provider(
        name,
        model,
        base_url=base_url,
        api_key=settings.api_key,
        timeout_s=settings.request_timeout_s,
        max_retries=settings.max_retries,
        context_window=settings.context_window,
        generation=Generation(settings.max_tokens, settings.temperature, settings.reasoning_effort),
        prompt_cache_retention=settings.prompt_cache_retention,
        cache_ttl=settings.cache_ttl,
    )


def _check_workspace(workspace: Path) -> None:
    """Refuse a workspace whose parent folder does not exist (a mistyped path); a new
    folder in an existing one is made by the agent."""
    parent = workspace.absolute().parent
    if not workspace.exists() and not parent.exists():
        raise ContextEngineError(f"workspace {workspace}: its folder {parent} does not exist")


def _prompt_lines() -> Iterator[str]:
    while True:
        try:
            line = input("\n> ")
        except EOFError:
            return
        if line.strip() in {"exit", "quit"}:
            return
        if line.strip():
            yield line


def _ask_on_terminal(question: str) -> str | None:
    """The human's answer to the agent's question (already printed); ``None`` for none."""
    try:
        answer = input("answer> ")
    except EOFError:
        return None
    return answer if answer.strip() else None


def main() -> None:
    """Entry point: user mistakes become one line on stderr and exit 2, never a traceback."""
    # one program name however started, so shell completion's script and variable match it
    if len(sys.argv) < 2:
        app(prog_name=PROG)  # standalone: prints the help (or completes a word) and exits
        return
    try:
        code = app(standalone_mode=False, prog_name=PROG)
    except UsageProblem as exc:
        _fail(exc.format_message())
    except ContextEngineError as exc:
        _fail(str(exc))
    except OSError as exc:
        # The system refused a file or socket operation the user's input asked for.
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}")
    except (KeyboardInterrupt, typer.Abort):
        sys.stderr.write("contextengine: interrupted\n")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str) -> NoReturn:
    """Write ``message`` as one ``error:`` line on stderr and exit 2."""
    line = terminal_safe(valid_text(" ".join(message.split())))
    sys.stderr.write(f"contextengine: error: {line}\n")
    sys.exit(2)


if __name__ == "__main__":
    main()
