"""Settings and feature flags (R10.1): one file, a master switch, one switch per component.

``Config()`` is all defaults. ``Config.load(path)`` reads a TOML or YAML file with flat keys
and then applies ``CONTEXTENGINE_<FIELD>`` environment overrides. With ``enabled = false``
every component is off and the engine is a plain chat-history builder.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from contextengine.errors import ConfigError
from contextengine.tools.modes import MODE_NAMES, ModeName
from contextengine.types import ReasoningEffort

HistoryMode = Literal["compressed", "full", "round_scratchpad"]

ENV_PREFIX = "CONTEXTENGINE_"
CONFIG_ENV = "CONTEXTENGINE_CONFIG"
TOOLING_ENV = frozenset({"CONTEXTENGINE_VLLM_PYTHON", "CONTEXTENGINE_STRESS"})
"""Variables with the settings' prefix that the benchmarks and tests read, not a session."""

COMPONENT_FLAGS: tuple[str, ...] = (
    "scrub",
    "code_law",
    "cache_breakpoints",
    "diversity",
    "mentions",
    "externalize",
    "recitation",
    "reminders",
    "masking",
    "compaction",
    "pruning",
    "working_memory",
    "injection",
)


class Config(BaseModel):
    """Every setting of a session. Unknown keys are errors, never silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
        4, ge=0, description="Newest tool results pruning never touches."
    )
    prune_min_tokens: int = Field(
        30, ge=1, description="A result or reply must save at least this many tokens to be pruned."
    )
    prune_min_batch_tokens: int = Field(
        3000, ge=1, description="Prune only batches saving at least this many tokens."
    )
    prune_horizon: float = Field(
        0.5,
        gt=0,
        description="Pruning expects this share of the steps so far to follow, and prunes "
        "when the batch pays back its cache rewrite within them.",
    )
    prune_max_payback: int = Field(
        20,
        ge=1,
        description="Pruning never expects more steps to follow than this: a batch must pay "
        "back its cache rewrite within this many steps.",
    )
    cache_read_price: float = Field(
        0.1, ge=0, description="Price of a cached input token (uncached = 1), for pruning."
    )
    cache_write_price: float = Field(
        1.25, ge=0, description="Price of a cache-write token (uncached = 1), for pruning."
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
    recitation: bool = Field(True, description="End every request with the task status.")
    reminders: bool = Field(True, description="Plan recitation, 2-action and 3-strike reminders.")
    masking: bool = Field(
        True, description="Enforce tool masks: the decode-time constraint and the guard."
    )
    compaction: bool = Field(True, description="Summarize old rounds near the window limit.")
    pruning: bool = Field(True, description="Turn old tool results into stubs when it pays.")
    working_memory: bool = Field(True, description="Keep task_plan / findings / progress files.")
    injection: bool = Field(True, description="Run context injectors once per user turn.")

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

    @field_validator("mode", mode="before")
    @classmethod
    def _mode_upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    def flag(self, name: str) -> bool:
        """Whether component ``name`` is on (its own switch and the master switch)."""
        if name not in COMPONENT_FLAGS:
            raise ConfigError(f"unknown component flag {name!r}")
        return self.enabled and bool(getattr(self, name))

    @property
    def effective_history_mode(self) -> HistoryMode:
        """The history mode in force: ``full`` when the master switch is off."""
        return self.history_mode if self.enabled else "full"

    def with_flags(self, **changes: Any) -> Config:
        """A copy with some settings changed (validated like a file would be)."""
        return _validate({**self.model_dump(), **changes}, source="with_flags")

    @classmethod
    def load(
        cls, path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
    ) -> Config:
        """Read a TOML/YAML file (or none), then apply ``CONTEXTENGINE_*`` env overrides."""
        env = os.environ if env is None else env
        if path is None and env.get(CONFIG_ENV):
            path = env[CONFIG_ENV]
        data: dict[str, Any] = {}
        source = "environment"
        if path is not None:
            data = _read_file(Path(path))
            source = str(path)
        data.update(_env_overrides(env))
        return _validate(data, source=source)


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path}: not UTF-8 text (byte {exc.start})") from None
    try:
        if path.suffix.lower() in {".yaml", ".yml"}:
            data = yaml.safe_load(text) or {}
        else:
            data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        first_line = str(exc).splitlines()[0]
        raise ConfigError(
            f"config file {path}: not valid {path.suffix or 'TOML'} ({first_line})"
        ) from exc
    except RecursionError:
        raise ConfigError(f"config file {path}: nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a table of settings at the top level")
    return data


def _env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    known = set(Config.model_fields)
    out: dict[str, Any] = {}
    for key, value in env.items():
        if not key.startswith(ENV_PREFIX) or key == CONFIG_ENV or key in TOOLING_ENV:
            continue
        name = key[len(ENV_PREFIX) :].lower()
        if name not in known:
            raise ConfigError(f"environment variable {key}: unknown setting {name!r}")
        out[name] = _parse_env_value(key, value, Config.model_fields[name].annotation)
    return out


def _parse_env_value(key: str, value: str, annotation: Any) -> Any:
    if annotation is bool:
        lowered = value.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise ConfigError(f"environment variable {key}: expected a boolean, got {value!r}")
    if annotation == tuple[str, ...]:
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def _validate(data: dict[str, Any], source: str) -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            known = ", ".join(sorted(Config.model_fields))
            raise ConfigError(f"{source}: unknown setting {where!r} (known: {known})") from None
        raise ConfigError(f"{source}: setting {where!r}: {err['msg']}") from None
