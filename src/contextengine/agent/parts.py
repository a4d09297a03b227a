"""What an ``Agent`` is made of, and the one factory for the standard parts.

``AgentParts.defaults`` builds every part from a provider, a workspace and a config; a
caller swaps any part with ``dataclasses.replace`` (a replay's builder with the recorded
prompt, say) and hands the result to ``Agent.from_parts``. Parts that share state share
the same object: the compactor sizes history with the gauge the agent's calls update.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from contextengine.agent.allowance import Allowance
from contextengine.agent.compaction import Compactor
from contextengine.agent.harness import HarnessSettings, build_harness
from contextengine.agent.hooks import Harness
from contextengine.agent.model_calls import TokenGauge
from contextengine.agent.prompts import default_system_prompt, text_protocol_prompt
from contextengine.codemap import CodeMap
from contextengine.compress.compaction import CompactionSettings
from contextengine.compress.delta import shown_results
from contextengine.compress.externalize import Externalizer
from contextengine.compress.observation import ObservationProcessor
from contextengine.compress.prune import Pruner, PruneSettings
from contextengine.compress.topic import user_text
from contextengine.config import COMPONENT_FLAGS, Config
from contextengine.context.builder import BuilderSettings, ContextBuilder
from contextengine.context.tokens import count_tokens
from contextengine.errors import ConfigError
from contextengine.memory.code_map import CodeMapInjector
from contextengine.memory.injectors import Injector
from contextengine.memory.scope import SessionScope
from contextengine.memory.working_memory import MEMORY_FILES, WorkingMemory
from contextengine.prices import CachePolicy
from contextengine.providers.base import Provider
from contextengine.session.folders import create_session
from contextengine.session.layout import DEFAULT_ROOT_NAME, SessionLayout
from contextengine.session.meta import ProviderChoice, read_meta
from contextengine.session.render import RenderStyle
from contextengine.session.session import Session
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.mask import ToolMask
from contextengine.toolkit.mcp_servers import session_servers
from contextengine.toolkit.sandbox import SandboxPolicy
from contextengine.toolkit.spec import ToolSpec
from contextengine.toolkit.traits import ToolTraits
from contextengine.toolkit.workspace import ARTIFACTS_ALIAS, RESERVED_DIR, Workspace
from contextengine.tools.agent_delegate import with_agent_delegate
from contextengine.tools.code_map import with_code_map
from contextengine.tools.context import ToolContext
from contextengine.tools.file_delete import TRASH_DIR
from contextengine.tools.memory import with_memory_tools
from contextengine.tools.registry import Toolset, default_toolset
from contextengine.tools.search_backend import search_backend
from contextengine.tools.web_http import WebPolicy
from contextengine.tools.web_search import WebSearch
from contextengine.types import HistoryMode, ToolCall

if TYPE_CHECKING:
    from contextengine.tools.mcp.attach import McpAttachment


class ToolRunner(Protocol):
    """What the agent needs of its tools: their names and specs, and running a call."""

    @property
    def names(self) -> tuple[str, ...]:
        """The tool names, sorted."""
        ...

    def specs(self) -> list[ToolSpec]:
        """The tools as the model sees them."""
        ...

    def traits(self, name: str) -> ToolTraits:
        """What the tool called ``name`` declares about itself."""
        ...

    def execute(
        self, call: ToolCall, ctx: ToolContext, mask: ToolMask | None = None
    ) -> ToolOutcome:
        """Run ``call`` (refused when ``mask`` does not allow it)."""
        ...


@dataclass(frozen=True)
class AgentParts:
    """The collaborators of one agent session."""

    provider: Provider
    config: Config
    workspace: Path
    session: Session
    builder: ContextBuilder
    toolset: ToolRunner
    tool_context: ToolContext
    memory: WorkingMemory
    externalizer: Externalizer
    processor: ObservationProcessor
    harness: Harness
    compactor: Compactor
    pruner: Pruner
    gauge: TokenGauge
    allowance: Allowance | None = None  # what the tail and reboots may cost
    mcp: McpAttachment | None = None  # the session's MCP servers, closed with the agent

    @classmethod
    def defaults(
        cls,
        provider: Provider,
        workspace: str | Path,
        config: Config | None = None,
        *,
        session: Session | None = None,
        tools: ToolRunner | None = None,
        harness: Harness | None = None,
        system_prompt: str | None = None,
        protocol: Literal["native", "text"] = "native",
        session_id: str | None = None,
        injectors: Sequence[Injector] = (),
        provider_choice: ProviderChoice | None = None,
        mode: str | None = None,
        parent: str | None = None,
        deferred_tools: frozenset[str] = frozenset(),
    ) -> AgentParts:
        """The standard parts; a given ``session``, ``tools`` or ``harness`` is used as is.

        Without ``session`` a new one is made for ``workspace`` (``protocol``,
        ``session_id``; ``provider_choice`` is recorded so a resume can choose it again;
        ``parent``: the delegating session's id, for a sub-agent). ``mode``: the preset the
        agent starts in (else the config's), which may add tools (``DEEP_RESEARCH``:
        ``agent_delegate``). ``deferred_tools``: of the given ``tools``, those the provider
        defers itself (a sub-agent's, as its parent's). With the default tools, the MCP servers of the config and of
        the workspace's ``.mcp.json`` are started and their tools join (R18); they are
        closed with the agent (``Agent.close``).
        """
        config = config if config is not None else Config.load()
        root = Path(workspace).resolve()
        root.mkdir(parents=True, exist_ok=True)
        mcp: McpAttachment | None = None
        if tools is None:
            default = _default_tools(config, mode or config.mode)
            _check_tool_search(config, provider)
            mcp = _mcp(config, root)
            tools = default.plus(*mcp.tools) if mcp is not None else default
        try:
            return cls._assembled(
                provider,
                root,
                config,
                tools,
                mcp,
                mcp.provider_deferred if mcp is not None else deferred_tools,
                session=session,
                harness=harness,
                system_prompt=system_prompt,
                protocol=protocol,
                session_id=session_id,
                injectors=injectors,
                provider_choice=provider_choice,
                parent=parent,
            )
        except BaseException:
            if mcp is not None:
                mcp.close()
            raise

    @classmethod
    def _assembled(
        cls,
        provider: Provider,
        root: Path,
        config: Config,
        toolset: ToolRunner,
        mcp: McpAttachment | None,
        deferred_tools: frozenset[str],
        *,
        session: Session | None,
        harness: Harness | None,
        system_prompt: str | None,
        protocol: Literal["native", "text"],
        session_id: str | None,
        injectors: Sequence[Injector],
        provider_choice: ProviderChoice | None,
        parent: str | None,
    ) -> AgentParts:
        if session is None:
            style = RenderStyle(protocol=protocol, diversity=config.flags.diversity)
            choice = _chosen(provider, provider_choice)
            session = create_session(root, config, style, choice, session_id, parent)
        memory = WorkingMemory(
            session.directory if config.flags.working_memory else None, files=session.stored
        )
        tool_context = _tool_context(root, session, memory, config)
        if tool_context.code_map is not None:
            injectors = [*injectors, CodeMapInjector(tool_context.code_map)]
        display = tool_context.workspace.display
        externalizer = Externalizer(
            session.layout.artifacts, display, tool_context.workspace.artifact_path
        )
        gauge = TokenGauge()
        pruner = pruner_of(config, session, externalizer, provider.cache_policy)
        allowance = Allowance(
            config.overhead_share, pruner.cache.read_price, pruner.cache.write_price
        )
        return cls(
            provider=provider,
            config=config,
            workspace=root,
            session=session,
            builder=_builder(toolset, session, root, config, system_prompt, deferred_tools),
            toolset=toolset,
            tool_context=tool_context,
            memory=memory,
            externalizer=externalizer,
            processor=_processor(config, externalizer, toolset, session),
            harness=harness
            or _harness(
                config, provider, session, memory, tool_context, toolset, injectors, allowance
            ),
            compactor=Compactor(
                session, config.settings(CompactionSettings), display, gauge.of_chunks
            ),
            pruner=pruner,
            gauge=gauge,
            allowance=allowance,
            mcp=mcp,
        )

    def child(self, provider_choice: ProviderChoice | None) -> AgentParts:
        """The parts of a sub-agent of this agent (R16): a new session next to this one
        (``parent`` names it), the same provider and tools, ``delegate_max_steps`` steps."""
        config = self.config
        return AgentParts.defaults(
            self.provider,
            self.workspace,
            config.with_flags(max_steps=config.delegate_max_steps),
            tools=self.toolset,
            protocol=self.session.style.protocol,
            provider_choice=provider_choice,
            parent=self.session.id,
            # the MCP tools this agent's provider defers, deferred alike (the same tools bytes)
            deferred_tools=self.builder.deferred_tools,
        )


@dataclass(frozen=True)
class AgentRecipe:
    """One config as a driver that assembles agents without reading it (the replay) holds
    it: the parts, session and builder made under it, and the settings a report names."""

    config: Config = field(default_factory=Config)

    @classmethod
    def load(cls, path: Path | None, spec: str, **options: Any) -> AgentRecipe:
        """The config file at ``path`` (and the environment) with ``spec``'s and
        ``options``' settings over them (``Config.with_flag_spec``: ``replay --flags``)."""
        return cls(Config.load(path).with_flag_spec(spec, **options))

    @classmethod
    def plain_chat(cls) -> AgentRecipe:
        """Every component off: a plain append-only chat, nothing compressed."""
        return cls(Config(enabled=False))

    @property
    def context_window(self) -> int:
        """The context window in tokens (compaction's trigger)."""
        return self.config.context_window

    @property
    def history_mode(self) -> HistoryMode:
        """The history mode in force (``full`` with every component off)."""
        return self.config.effective_history_mode

    @property
    def flags(self) -> dict[str, bool]:
        """Each component's switch as in force, in ``COMPONENT_FLAGS`` order."""
        flags = self.config.flags
        return {name: getattr(flags, name) for name in COMPONENT_FLAGS}

    def parts(
        self,
        provider: Provider,
        workspace: Path,
        *,
        session: Session,
        tools: ToolRunner,
        min_steps: int = 0,
    ) -> AgentParts:
        """``AgentParts.defaults`` under this config, with at least ``min_steps`` steps a turn."""
        config = self.config
        if min_steps > config.max_steps:
            config = config.with_flags(max_steps=min_steps)
        return AgentParts.defaults(provider, workspace, config, session=session, tools=tools)

    def scratch_session(
        self, workspace: Path, session_id: str, protocol: Literal["native", "text"]
    ) -> Session:
        """A throwaway session (not durable, not in the config's store) where a session of
        ``workspace`` sits in the default layout (the config's org and team)."""
        config = self.config
        layout = SessionLayout.under(
            workspace / DEFAULT_ROOT_NAME, config.org, config.team, workspace.name, session_id
        )
        return Session.create(
            layout.directory,
            session_id=session_id,
            style=RenderStyle(protocol, config.flags.diversity),
            durable=False,
        )

    def builder(
        self,
        system_prompt: str,
        tools: Sequence[ToolSpec | Mapping[str, Any]],
        project_root: Path,
    ) -> ContextBuilder:
        """A builder under this config's settings for ``system_prompt`` and ``tools`` as
        given (no default prompt, no text-protocol instructions)."""
        return ContextBuilder(
            system_prompt=system_prompt,
            tools=tools,
            project_root=project_root,
            settings=self.config.settings(BuilderSettings),
        )


def pruner_of(
    config: Config, session: Session, externalizer: Externalizer, cache: CachePolicy
) -> Pruner:
    """The session's pruner: the provider's ``cache`` policy with what ``config`` sets
    instead (``cache_expiry_s``, ``cache_read_price``, ``cache_write_price``)."""
    policy = cache.overridden(
        config.cache_expiry_s, config.cache_read_price, config.cache_write_price
    )
    return Pruner(session, config.settings(PruneSettings), externalizer, policy)


def _harness(
    config: Config,
    provider: Provider,
    session: Session,
    memory: WorkingMemory,
    tool_context: ToolContext,
    toolset: ToolRunner,
    injectors: Sequence[Injector],
    allowance: Allowance,
) -> Harness:
    """The default harness of the session (``build_harness``), with its settings and the
    session's overhead ``allowance``."""
    return build_harness(
        session=session,
        memory=memory,
        workspace=tool_context.workspace,
        config=config.settings(HarnessSettings),
        model=getattr(provider, "model", ""),
        injectors=injectors,
        traits=toolset.traits,
        tool_names=toolset.names,
        call_traits=getattr(toolset, "call_traits", None),
        allowance=allowance,
    )


def _processor(
    config: Config, externalizer: Externalizer, toolset: ToolRunner, session: Session
) -> ObservationProcessor:
    """How tool results enter the session's history (``history_mode``, the flags in force)."""
    flags = config.flags
    return ObservationProcessor(
        externalizer,
        mode=config.effective_history_mode,
        externalize=flags.externalize,
        traits=toolset.traits,
        shown=partial(shown_results, session) if flags.deltas else tuple,
        topic=partial(user_text, session),
    )


def _mcp(config: Config, workspace: Path) -> McpAttachment | None:
    """The MCP servers of the config and of ``.mcp.json``, started (``None``: there are none)."""
    servers = session_servers(config.mcp_servers, workspace, config.mcp_project_file)
    if not servers:
        return None
    try:
        from contextengine.tools.mcp.attach import attach_mcp
    except ImportError:
        names = ", ".join(servers)
        raise ConfigError(
            f"MCP servers are configured ({names}) but the MCP client is not installed: "
            "pip install 'contextengine[mcp]'"
        ) from None
    return attach_mcp(
        servers,
        config.mcp_tool_budget_tokens,
        count_tokens,
        config.mcp_start_timeout_s,
        config.mcp_call_timeout_s,
        config.mcp_tool_search,
    )


def _check_tool_search(config: Config, provider: Provider) -> None:
    """``mcp_tool_search='anthropic'`` needs a provider that defers tools itself."""
    if config.mcp_tool_search == "anthropic" and not getattr(provider, "defers_tools", False):
        raise ConfigError(
            f"mcp_tool_search = 'anthropic' needs the Anthropic provider, not "
            f"{type(provider).__name__}; use mcp_tool_search = 'engine' with any other"
        )


def _default_tools(config: Config, mode: str | None) -> Toolset:
    """The default tools, the memory tools with working memory on, ``code_map`` with it on,
    ``agent_delegate`` with ``subagents`` on or a start in ``DEEP_RESEARCH`` mode,
    ``web_search`` with a search backend (without one it could only fail, yet its
    definition would be paid on every request)."""
    toolset = default_toolset()
    if config.web_search_backend != "none":
        toolset = toolset.plus(WebSearch())
    flags = config.flags
    if flags.working_memory:
        toolset = with_memory_tools(toolset)
    if flags.subagents or (mode is not None and mode.strip().upper() == "DEEP_RESEARCH"):
        toolset = with_agent_delegate(toolset)
    return with_code_map(toolset) if flags.code_map else toolset


def _chosen(provider: Provider, choice: ProviderChoice | None) -> ProviderChoice:
    """The choice to record: the given one, its model completed from the provider."""
    model = getattr(provider, "model", "")
    if choice is None:
        return ProviderChoice(model=model)
    return ProviderChoice(choice.name, choice.model or model, choice.base_url)


def _builder(
    toolset: ToolRunner,
    session: Session,
    workspace: Path,
    config: Config,
    system_prompt: str | None,
    deferred_tools: frozenset[str],
) -> ContextBuilder:
    protocol = session.style.protocol
    specs = toolset.specs()
    flags = config.flags
    base = system_prompt or default_system_prompt(
        {s.name for s in specs}, recitation=flags.recitation, working_memory=flags.working_memory
    )
    return ContextBuilder(
        system_prompt=text_protocol_prompt(base, specs) if protocol == "text" else base,
        tools=specs if protocol == "native" else (),
        project_root=workspace,
        settings=config.settings(BuilderSettings),
        deferred_tools=deferred_tools,
    )


def _tool_context(
    workspace: Path, session: Session, memory: WorkingMemory, config: Config
) -> ToolContext:
    private = SessionScope.of(session.directory).private_to(workspace)
    artifacts = _shown_artifacts(session)
    confined = Workspace(
        workspace,
        session_dir=session.directory,
        session_access={
            **dict.fromkeys(MEMORY_FILES, "write"),
            session.layout.artifacts.name: "read",
            TRASH_DIR: "read",
        },
        private=private,
        artifacts=artifacts,
    )
    return ToolContext(
        confined,
        code_map=CodeMap(confined, config.code_map_tokens) if config.flags.code_map else None,
        memory=memory,
        web=WebPolicy.from_config(config),
        search=search_backend(config),
        sandbox=SandboxPolicy.from_config(
            config,
            hidden_paths=(workspace / RESERVED_DIR, *private, session.directory),
            # the short path pruning stubs show opens in the shell too
            shown_paths=((artifacts, workspace.joinpath(*ARTIFACTS_ALIAS)),),
        ),
    )


def _shown_artifacts(session: Session) -> Path:
    """The artifacts ``.contextengine/artifacts/`` opens: a sub-agent's parent's (a path its
    task copied from the parent's view opens as it did there), else the session's own."""
    meta = read_meta(session.directory)
    if meta is not None and meta.parent is not None:
        return session.layout.sibling(meta.parent).artifacts
    return session.layout.artifacts
