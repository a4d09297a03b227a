"""contextengine: cache-stable requests, recitation, working memory, reversible compression.

The public surface is re-exported here; importing the package has no side effects.
"""

from contextengine.agent.events import RunResult
from contextengine.agent.loop import Agent
from contextengine.agent.parts import AgentParts
from contextengine.canonical import canonical_json
from contextengine.compress.externalize import CompressedRef
from contextengine.config import Config
from contextengine.context.builder import ContextBuilder, FullObservation, LiveContext
from contextengine.context.mentions import add_mention_reminders, find_mentions
from contextengine.context.monitor import CacheBreak, PrefixMonitor, PrefixReport
from contextengine.context.request import Request
from contextengine.context.scrub import scrub_dynamic, scrub_report
from contextengine.errors import (
    ConfigError,
    ContextEngineError,
    MissingAPIKeyError,
    ProviderError,
    SessionLogError,
    TrajectoryError,
    WorkspaceError,
)
from contextengine.providers.base import Provider
from contextengine.providers.factory import PROVIDER_NAMES, make_provider
from contextengine.providers.scripted import ScriptedProvider
from contextengine.session.entries import (
    AssistantEntry,
    ErrorEntry,
    NoteEntry,
    ReminderEntry,
    SummaryEntry,
    ToolCallRecord,
    ToolResultEntry,
    ToolStartEntry,
    UserEntry,
)
from contextengine.session.session import Session
from contextengine.toolkit.mask import ToolMask
from contextengine.toolkit.modes import MODES
from contextengine.toolkit.spec import ToolSpec
from contextengine.types import ModelReply, ToolCall, Usage

__all__ = [
    "MODES",
    "PROVIDER_NAMES",
    "Agent",
    "AgentParts",
    "AssistantEntry",
    "CacheBreak",
    "CompressedRef",
    "Config",
    "ConfigError",
    "ContextBuilder",
    "ContextEngineError",
    "ErrorEntry",
    "FullObservation",
    "LiveContext",
    "MissingAPIKeyError",
    "ModelReply",
    "NoteEntry",
    "PrefixMonitor",
    "PrefixReport",
    "Provider",
    "ProviderError",
    "ReminderEntry",
    "Request",
    "RunResult",
    "ScriptedProvider",
    "Session",
    "SessionLogError",
    "SummaryEntry",
    "ToolCall",
    "ToolCallRecord",
    "ToolMask",
    "ToolResultEntry",
    "ToolSpec",
    "ToolStartEntry",
    "TrajectoryError",
    "Usage",
    "UserEntry",
    "WorkspaceError",
    "add_mention_reminders",
    "canonical_json",
    "find_mentions",
    "make_provider",
    "scrub_dynamic",
    "scrub_report",
]
