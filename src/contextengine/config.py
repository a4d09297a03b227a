"""Settings and feature flags (R10.1): one file, a master switch, one switch per component.

``Config()`` is all defaults. ``Config.load(path)`` reads a TOML or YAML file with flat keys,
then ``CONTEXTENGINE_<FIELD>`` environment overrides, then command-line options, each through a
pydantic-settings source; a bad value is blamed on the source it came from. With
``enabled = false`` every component is off and the engine is a plain chat-history builder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from contextengine.errors import ConfigError
from contextengine.toolkit.mcp_servers import McpServer, McpToolSearch, server_entries
from contextengine.toolkit.modes import MODE_NAMES, ModeName
from contextengine.types import HistoryMode, ReasoningEffort

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

SettingsT = TypeVar("SettingsT", bound="DataclassInstance")

ENV_PREFIX = "CONTEXTENGINE_"
CONFIG_ENV = "CONTEXTENGINE_CONFIG"
STORE_SCHEMES = frozenset({"file", "postgresql", "postgres"})
TOOLING_ENV = frozenset({"CONTEXTENGINE_VLLM_PYTHON", "CONTEXTENGINE_STRESS"})
"""Variables with the settings' prefix that the benchmarks and tests read, not a session."""

COMPONENT_FLAGS: tuple[str, ...] = (
    "scrub",
    "code_law",
    "cache_breakpoints",
    "diversity",
    "mentions",
    "externalize",
    "deltas",
    "recitation",
    "reminders",
    "masking",
    "compaction",
    "pruning",
    "working_memory",
    "injection",
)
OPT_IN_FLAGS: tuple[str, ...] = ("code_map", "subagents", "memory_git")
"""Components that are off unless asked for; the master switch turns them off too."""


class Flags(BaseModel):
    """Which components are on: each one's own switch and the master switch, resolved once.

    Read as attributes (``config.flags.pruning``), so a misspelt flag fails mypy and at
    run time, instead of a string looked up when the component first runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scrub: bool
    code_law: bool
    cache_breakpoints: bool
    diversity: bool
    mentions: bool
    externalize: bool
    deltas: bool
    recitation: bool
    reminders: bool
    masking: bool
    compaction: bool
    pruning: bool
    working_memory: bool
    injection: bool
    code_map: bool
    subagents: bool
    memory_git: bool


class Config(BaseSettings):
    """Every setting of a session. Unknown keys are errors, never silently ignored."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True, env_prefix=ENV_PREFIX)

    context_window: int = Field(200_000, gt=0, description="Model context window in tokens.")
    compaction_trigger: float = Field(
        0.8, gt=0, le=1, description="Compact when estimated input >= this share of the window."
    )
    keep_rounds: int = Field(10, ge=1, description="Recent rounds compaction always keeps.")
    history_mode: HistoryMode = Field(
        "full",
        description="How tool results enter history: full (verbatim; large ones as "
        "compressed_refs), compressed (per-tool forms, newest shown in full once) or "
        "round_scratchpad. The default was chosen by benchmarks/replay_all.py.",
    )
    prune_keep_recent: int = Field(
        2,
        ge=0,
        description="Newest replies pruning never touches, with every result of their calls "
        "(and as many newest results, whatever call they answer).",
    )
    prune_min_tokens: int = Field(
        30, ge=1, description="A result or reply must save at least this many tokens to be pruned."
    )
    prune_min_batch_tokens: int = Field(
        1000, ge=1, description="Prune only batches saving at least this many tokens."
    )
    prune_horizon: float = Field(
        0.35,
        gt=0,
        description="Pruning expects this share of the steps so far to follow, and prunes "
        "when the batch pays back its cache rewrite within them.",
    )
    prune_max_payback: int = Field(
        25,
        ge=1,
        description="Pruning never expects more steps to follow than this: a batch must pay "
        "back its cache rewrite within this many steps.",
    )
    max_preserved_errors: int = Field(
        5,
        ge=0,
        description="Unresolved recent errors the task-status tail lists, one line each, when "
        "it recites in full (0: none; seed 001 maxPreservedErrors).",
    )
    recite_after_chars: int = Field(
        24_000,
        ge=0,
        description="How long the history in view (characters of its rendering; a "
        "compaction's summary in place of what it archived) grows while the task-status tail "
        "stays brief: shorter, the objective, the plan call and errors are in the model's "
        "recent view, so the tail is the one-line focus and, after a high-risk call, the "
        "full status (objective, steps and focus, R8.2); longer, with errors and the memory "
        "folder as due (R4.2). 0: the full status whenever it is due.",
    )
    prune_risk_share: float = Field(
        0.02,
        ge=0,
        description="The most a prune may lose if the run ends right after it, beyond the "
        "savings earlier prunes banked, as a share of what the history has cost so far.",
    )
    overhead_share: float | None = Field(
        None,
        ge=0,
        description="The most the optional overheads (the task-status tail, a 3-strike "
        "reboot) may add, as a share of what the session's requests have cost without them "
        "so far, e.g. 0.01: a short or error-heavy run is never much dearer than a plain chat. "
        "Unset (the default): no limit, every request ends with the tail (R4.2) and a reboot "
        "is asked at the third strike (R5.3).",
    )
    cache_expiry_s: float | None = Field(
        None,
        ge=0,
        description="Seconds an idle prompt cache lives (default: the provider's own: 3600 "
        "for Anthropic with cache_ttl=1h, 86400 for OpenAI with prompt_cache_retention=24h, "
        "else 300). A request after a longer pause writes the whole prompt anyway, so "
        "pruning then costs no rewrite.",
    )
    cache_read_price: float | None = Field(
        None,
        ge=0,
        description="Price of a cached input token (uncached = 1), for pruning; unset: the "
        "model's own (genai-prices), else 0.1.",
    )
    cache_write_price: float | None = Field(
        None,
        ge=0,
        description="Price of a cache-write token (uncached = 1), for pruning; unset: the "
        "model's own (genai-prices: Anthropic's 5-minute write; set 2 with cache_ttl=1h), "
        "else 1.25.",
    )
    summary_timeout_s: float = Field(
        120.0, gt=0, allow_inf_nan=False, description="Compaction summary call timeout."
    )
    request_timeout_s: float = Field(
        120.0,
        gt=0,
        allow_inf_nan=False,
        description="Seconds a model HTTP call may wait for its next bytes.",
    )
    max_retries: int = Field(
        2, ge=0, le=20, description="Retries of a model call that failed or broke off."
    )
    max_steps: int = Field(100, ge=1, description="Model calls allowed in one round.")
    max_tokens: int | None = Field(
        None,
        gt=0,
        description="Most tokens a reply may have (default: the API's; 4096 for Anthropic).",
    )
    temperature: float | None = Field(
        None, ge=0, le=2, allow_inf_nan=False, description="Sampling temperature."
    )
    reasoning_effort: ReasoningEffort | None = Field(
        None,
        description="Reasoning effort of reasoning models (OpenAI none..xhigh, "
        "Anthropic low..max).",
    )
    prompt_cache_retention: Literal["in_memory", "24h"] | None = Field(
        None, description="OpenAI prompt cache retention (default: the API's)."
    )
    cache_ttl: Literal["5m", "1h"] = Field(
        "5m", description="Lifetime of Anthropic cache breakpoints: 5m or 1h."
    )
    mode: ModeName | None = Field(
        None,
        description="Mode preset the agent starts in: " + ", ".join(MODE_NAMES) + " "
        "(default: none, every tool allowed).",
    )
    root: str | None = Field(
        None, description="Session root; default <workspace>/.contextengine/sessions."
    )
    org: str = "default"
    team: str = "default"
    server_token: str | None = Field(
        None, description="API token of `contextengine serve`; default: a new one per start."
    )
    server_allowed_hosts: tuple[str, ...] = Field(
        (), description="Host names the server answers besides localhost and its bound host."
    )
    server_max_body_bytes: int = Field(
        1_048_576, gt=0, description="Largest request body the server accepts (else 413)."
    )
    server_idle_s: float = Field(
        600.0, gt=0, description="Seconds an unused session agent stays loaded in the server."
    )

    record_requests: bool = Field(
        True, description="Keep every model request in requests.jsonl (for inspect)."
    )

    sandbox: bool = Field(True, description="Run shell_exec in a bubblewrap (bwrap) sandbox.")
    sandbox_network: bool = Field(False, description="Let sandboxed commands use the network.")
    sandbox_unix_sockets: bool | tuple[str, ...] = Field(
        False,
        description="Unix-domain sockets sandboxed commands may reach: false (none: a seccomp "
        "filter refuses them), true (all), or a list of socket paths (absolute or relative to "
        "the workspace; every other socket file in the workspace is masked when a command "
        "starts).",
    )
    sandbox_read_only_paths: tuple[str, ...] = Field(
        (), description="Extra host paths sandboxed commands may read (not write)."
    )
    sandbox_memory_mb: int = Field(4096, gt=0, description="Data memory per sandboxed process.")
    sandbox_cpu_s: int = Field(600, gt=0, description="CPU seconds per sandboxed process.")
    sandbox_file_size_mb: int = Field(1024, gt=0, description="Largest file a command writes.")
    sandbox_bwrap: str = Field("bwrap", description="The bubblewrap binary: a name or a path.")

    web_search_backend: Literal["none", "searxng", "brave"] = Field(
        "none", description="Backend of web_search: none, searxng (self-hosted) or brave."
    )
    web_search_url: str | None = Field(
        None, description="Base URL of the SearXNG instance (or of a Brave API proxy)."
    )
    api_key: str | None = Field(
        None,
        repr=False,
        description="API key for the model provider (a self-hosted server's key, or instead of "
        "OPENAI_API_KEY / ANTHROPIC_API_KEY); best set as CONTEXTENGINE_API_KEY.",
    )
    web_search_key: str | None = Field(
        None, description="API key of the hosted search backend (brave)."
    )
    web_timeout_s: float = Field(
        20.0, gt=0, allow_inf_nan=False, description="Seconds a web request may take."
    )
    web_max_bytes: int = Field(
        2_000_000, gt=0, description="Largest page body web_fetch reads (the rest is cut)."
    )
    web_allow_private: bool = Field(
        False,
        description="Let web_fetch reach private, loopback and link-local addresses.",
    )

    code_map: bool = Field(
        False,
        description="Map the workspace's code (needs the codemap extra): the map is injected "
        "once per turn while files are unchanged, and the code_map tool focuses it.",
    )
    code_map_tokens: int = Field(
        1024, ge=64, le=16_384, description="Token budget of the injected code map."
    )

    enabled: bool = Field(True, description="Master switch; off = plain chat history.")
    scrub: bool = Field(True, description="Scrub dates, times, UUIDs, session ids from L1.")
    code_law: bool = Field(True, description="Inject CODE_LAW.md as layer L2.")
    cache_breakpoints: bool = Field(True, description="Report cache breakpoints to providers.")
    diversity: bool = Field(True, description="Vary observation templates per entry.")
    mentions: bool = Field(True, description="Add read reminders for @file mentions.")
    externalize: bool = Field(True, description="Write large observations to artifacts.")
    deltas: bool = Field(
        True, description="Show a result that repeats an earlier one as its difference from it."
    )
    recitation: bool = Field(True, description="End every request with the task status.")
    reminders: bool = Field(True, description="Plan recitation, 2-action and 3-strike reminders.")
    masking: bool = Field(
        True, description="Enforce tool masks: the decode-time constraint and the guard."
    )
    compaction: bool = Field(True, description="Summarize old rounds near the window limit.")
    pruning: bool = Field(True, description="Turn old tool results into stubs when it pays.")
    working_memory: bool = Field(True, description="Keep task_plan / findings / progress files.")
    injection: bool = Field(True, description="Run context injectors once per user turn.")

    # Session store (#15): where sessions are kept.
    store: str | None = Field(
        None,
        description="Where sessions are kept: a folder path or file://PATH (the sessions "
        "root, as `root`), or postgresql://USER@HOST:PORT/DB (default: files under `root`).",
    )

    @field_validator("store")
    @classmethod
    def _store_scheme(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        scheme = value.split("://", 1)[0].lower() if "://" in value else "file"
        if scheme not in STORE_SCHEMES:
            raise ValueError(
                f"store {value!r}: unknown kind {scheme!r}"
                " (give a folder path, file://PATH or postgresql://...)"
            )
        return value.strip()

    # Sub-agents (agent_delegate, R16) and versioned working memory
    subagents: bool = Field(
        False,
        description="Offer the agent_delegate tool (always offered in a session that starts "
        "in DEEP_RESEARCH mode).",
    )
    max_delegate_depth: int = Field(
        1, ge=0, le=5, description="How deep sub-agents may nest (1: children cannot delegate)."
    )
    delegate_max_steps: int = Field(
        30, ge=1, description="Model calls a sub-agent may make for its task."
    )
    memory_git: bool = Field(
        False,
        description="Commit the session's three memory files to a git repo in the session "
        "folder at the end of every turn that changed them (needs git).",
    )

    # Turns on workers (#15): the broker that hands turns from server replicas to workers.
    broker: str | None = Field(
        None,
        description="The Celery broker (redis://HOST:PORT/DB) that hands turns to "
        "`contextengine worker`s; with a postgresql:// store, `serve` then runs no turn itself.",
    )
    worker_redelivery_s: float = Field(
        3600.0,
        gt=0,
        description="A turn whose worker went silent (killed) is handed to another worker "
        "after this long (the broker's visibility timeout; keep it above the longest turn).",
    )

    # MCP servers (R18): their tools join the session's tool list.
    mcp_servers: dict[str, McpServer] = Field(
        default_factory=dict,
        description="MCP servers whose tools the agent may call, by name, in the shape of "
        "mcpServers in .mcp.json: {command, args, env, cwd} or {type: http, url, headers}.",
    )
    mcp_project_file: bool = Field(
        True,
        description="Also start the servers of .mcp.json at the workspace root (a "
        "command's --mcp-config replaces it).",
    )
    mcp_tool_budget_tokens: int = Field(
        2000,
        ge=0,
        description="Most tokens the MCP tools' definitions may take in every request; over "
        "it they are found with tool_search and run with tool_call (0: always).",
    )
    mcp_tool_search: McpToolSearch = Field(
        "engine",
        description="How MCP tools over the budget are deferred: 'engine' (the fixed "
        "tool_search / tool_call pair, any provider) or 'anthropic' (listed with "
        "defer_loading behind Anthropic's own tool search; the Anthropic provider only).",
    )
    mcp_start_timeout_s: float = Field(
        30.0, gt=0, allow_inf_nan=False, description="Seconds an MCP server may take to start."
    )
    mcp_call_timeout_s: float = Field(
        120.0, gt=0, allow_inf_nan=False, description="Seconds an MCP tool call may take."
    )

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _mcp_servers(cls, value: Any) -> Any:
        try:
            return server_entries(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("mode", mode="before")
    @classmethod
    def _mode_upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @property
    def flags(self) -> Flags:
        """The components in force: each switch ANDed with the master switch ``enabled``."""
        return Flags(**{name: self.enabled and getattr(self, name) for name in Flags.model_fields})

    def settings(self, kind: type[SettingsT]) -> SettingsT:
        """A component's settings: the frozen dataclass ``kind`` filled from the same-named
        settings (a flag's field, and ``history_mode``, get the value in force under the master
        switch)."""
        resolved = {**self.flags.model_dump(), "history_mode": self.effective_history_mode}
        values = {
            field.name: resolved[field.name]
            if field.name in resolved
            else getattr(self, field.name)
            for field in dataclasses.fields(kind)
        }
        return kind(**values)

    @property
    def effective_history_mode(self) -> HistoryMode:
        """The history mode in force: ``full`` when the master switch is off."""
        return self.history_mode if self.enabled else "full"

    def with_flags(self, **changes: Any) -> Config:
        """A copy with some settings changed (validated like a file would be)."""
        values = {**self.model_dump(), **changes}
        return _validate(values, {name: ("with_flags", False) for name in changes})

    def with_flag_spec(self, spec: str, **options: Any) -> Config:
        """A copy with ``name=value`` settings from ``spec`` (comma-separated; ``on`` / ``off``
        for switches, e.g. ``diversity=off,history_mode=full``: ``replay --flags``) and then
        ``options`` (settings given as their own command-line options; ``None`` = not given)."""
        changes: dict[str, object] = {}
        for item in filter(None, (part.strip() for part in spec.split(","))):
            name, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"--flags: {item!r} is not name=value")
            name = name.strip()
            field = Config.model_fields.get(name)
            if field is not None and field.annotation is bool:
                changes[name] = _switch(name, value.strip())
            else:
                changes[name] = value.strip()
        changes.update({k: v for k, v in options.items() if v is not None})
        if not changes:
            return self
        try:
            return self.with_flags(**changes)
        except ConfigError as exc:
            # name the command-line options, not the method that checked them
            raise ConfigError("--flags: " + str(exc).split(": ", 1)[-1]) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """``Config(...)`` is its arguments and the defaults; only ``load`` reads file and env."""
        return (init_settings,)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        cli: Mapping[str, tuple[str, Any]] | None = None,
    ) -> Config:
        """Read a TOML/YAML file (or none), then ``CONTEXTENGINE_*`` env overrides, then
        ``cli`` (setting name -> (its command-line option, value); ``None`` = not given)."""
        env = os.environ if env is None else env
        if path is None and env.get(CONFIG_ENV):
            path = env[CONFIG_ENV]
        values: dict[str, Any] = {}
        origins: dict[str, _Origin] = {}
        if path is not None:
            from_file = _read_file(Path(path))
            values.update(from_file)
            origins.update({name: (f"config file {path}", False) for name in from_file})
        from_env = _EnvSource(env)()
        values.update(from_env)
        origins.update(
            {name: (f"environment variable {ENV_PREFIX}{name.upper()}", True) for name in from_env}
        )
        given = {name: pair for name, pair in (cli or {}).items() if pair[1] is not None}
        values.update({name: value for name, (_, value) in given.items()})
        origins.update({name: (flag, True) for name, (flag, _) in given.items()})
        return _validate(values, origins)


_Origin = tuple[str, bool]
"""Where a setting's value came from, and whether that label already names the setting."""


class _EnvSource(EnvSettingsSource):
    """``CONTEXTENGINE_*`` variables of a given mapping; lists are comma-separated."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._given_env = env
        super().__init__(Config)
        # the library skips variables that name no setting; a typo must not pass unnoticed
        for key in env:
            if not key.startswith(ENV_PREFIX) or key in _NOT_SETTINGS:
                continue
            name = key[len(ENV_PREFIX) :].lower()
            if name not in Config.model_fields:
                raise ConfigError(f"environment variable {key}: unknown setting {name!r}")

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # the library reads os.environ; tests and callers may hand in their own mapping
        return {key.lower(): value for key, value in self._given_env.items()}

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        """A list setting is comma-separated text (``a,b``), as the docs show it; the MCP
        servers are JSON, as in ``.mcp.json``."""
        if field_name == "mcp_servers":
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value  # the setting's validator names the problem and the variable
        if field_name == "sandbox_unix_sockets" and str(value).strip().lower() in _BOOL_TEXT:
            return value  # the true/false form, not a socket named "true"
        return tuple(part.strip() for part in str(value).split(",") if part.strip())


_BOOL_TEXT = frozenset({"true", "false", "1", "0", "yes", "no", "on", "off"})
_NOT_SETTINGS = TOOLING_ENV | {CONFIG_ENV}


def _read_file(path: Path) -> dict[str, Any]:
    is_yaml = path.suffix.lower() in {".yaml", ".yml"}
    try:
        # the library skips a file it cannot find; one the user named must be there
        with path.open("rb"):
            pass
        source: PydanticBaseSettingsSource = (
            YamlConfigSettingsSource(Config, yaml_file=path)
            if is_yaml
            else TomlConfigSettingsSource(Config, toml_file=path)
        )
        data = source()
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path}: not UTF-8 text (byte {exc.start})") from None
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        first_line = str(exc).splitlines()[0]
        raise ConfigError(
            f"config file {path}: not valid {path.suffix or 'TOML'} ({first_line})"
        ) from exc
    except RecursionError:
        raise ConfigError(f"config file {path}: nested too deeply") from None
    except (TypeError, ValueError, AttributeError):
        raise ConfigError(
            f"config file {path}: expected a table of settings at the top level"
        ) from None
    return data


def _switch(name: str, value: str) -> bool:
    """A ``--flags`` switch's value: ``on``/``off`` and their usual spellings."""
    lowered = value.lower()
    if lowered in {"on", "true", "yes", "1"}:
        return True
    if lowered in {"off", "false", "no", "0"}:
        return False
    raise ConfigError(f"--flags: {name}={value!r}: expected on or off")


def _validate(data: dict[str, Any], origins: Mapping[str, _Origin]) -> Config:
    """``Config`` of ``data``; an error names where the offending value came from."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        source, names_setting = origins.get(name, ("settings", False))
        if err["type"] == "extra_forbidden":
            known = ", ".join(sorted(Config.model_fields))
            raise ConfigError(f"{source}: unknown setting {name!r} (known: {known})") from None
        where = source if names_setting else f"{source}: setting {name!r}"
        raise ConfigError(f"{where}: {err['msg']}") from None
