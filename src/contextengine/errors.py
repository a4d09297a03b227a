"""The library's exception tree: every error a user of the library or the CLI can meet.

Each error carries a one-line message that names the problem (a file, a line, a field, a
status). The CLI prints that line and exits 2; the server answers it as JSON.

    ContextEngineError
    ├── ConfigError                a user mistake: config file, env value, argument, tool list
    ├── SessionLogError            a session log or request/usage log that cannot be read
    │   └── AppendConflictError    an index of the record already holds a different entry
    ├── StoreError                 a session store that cannot be used (bad URL, unreachable,
    │                              the server gone mid-turn): names the store, password hidden
    ├── DiskError                  a file the library writes that the disk refuses (full,
    │                              quota, read-only, size limit): names the path
    ├── TrajectoryError            a malformed trajectory file (file and field named)
    ├── WorkspaceError             a path outside the workspace, used outside a tool call
    │   └── PathRefused            (toolkit.confine) a path a tool may not touch
    ├── PlanUpdateError            a plan update that cannot apply (a step out of range)
    ├── McpStartError              (tools.mcp.clients) an MCP server that cannot start or
    │                              does not answer its handshake: names the server
    ├── ProviderError              a model call failed: ``status``, ``retryable``
    │   ├── MissingAPIKeyError     no API key set
    │   ├── ScriptExhaustedError   the scripted provider ran out of replies
    │   ├── RateLimitError         HTTP 429                                   retryable
    │   ├── AuthError              HTTP 401 / 403
    │   ├── BadRequestError        any other 4xx (409 retryable)
    │   ├── ServerError            HTTP 5xx, 529 overloaded                   retryable
    │   ├── ProviderConnectionError  the server cannot be reached             retryable
    │   │   └── ProviderTimeoutError no answer in time (or HTTP 408)          retryable
    │   ├── BrokenReplyError       a 200 reply that is no complete stream     retryable
    │   └── RoundInterrupted       (measure.playback) a recording's round ends
    ├── ApiError                   (server.errors) a request the HTTP API refuses, with its status
    ├── UpstreamError              (proxy.app) the recording proxy's upstream is unusable
    ├── ReplayError                (measure.replay) a recording that cannot be replayed
    ├── CaptureFormatError         (measure.segments) a capture file in no known format
    ├── CodeMapUnavailable         (codemap.grammars) the code map's tree-sitter extra is missing
    ├── MissingIntegration         (integrations.mirror) an integration's framework is not installed
    └── UnrecoverableRef           (compress.externalize) a compressed_ref whose text is gone

``ProviderError`` statuses map to classes in one place, ``providers.http_errors``; the
single retry loop, ``providers.retry.retried``, retries exactly the errors whose
``retryable`` is true.

Outside the tree, on purpose:

* Tool-facing failures are *values* (``contextengine.tools.ToolError``) with literal codes a
  model can read; signals raised inside a tool (``Refusal``, ``WebRefused``,
  ``SandboxUnavailable``) are caught by that tool and become such values.
* ``ValueError`` / ``TypeError`` / ``KeyError`` raised inside parsers of untrusted text
  (``untrusted``, ``canonical_json``, log readers) and inside pydantic validators are caught
  at the boundary and re-raised as a tree member naming the file or field, or become a
  validation message; the rest mark broken internal invariants (bugs), not user mistakes.
"""

from __future__ import annotations

from typing import ClassVar


class ContextEngineError(Exception):
    """Base class of every error the library raises to its user."""


class ConfigError(ContextEngineError):
    """A user mistake: an invalid config file, env value, argument or tool list."""


class SessionLogError(ContextEngineError):
    """A session log cannot be read: names the file and the line."""


class AppendConflictError(SessionLogError):
    """An append at an index the record already holds with a different entry."""


class StoreError(ContextEngineError):
    """A session store that cannot be used (a bad URL, a server that cannot be reached)."""


class DiskError(ContextEngineError):
    """The disk refused a file the library writes (full, quota, read-only): names the path."""


class TrajectoryError(ContextEngineError):
    """A trajectory file is malformed: names the file and the field."""


class WorkspaceError(ContextEngineError):
    """A path resolves outside the workspace."""


class PlanUpdateError(ContextEngineError):
    """An update that cannot apply to the plan (a step number out of range); says why."""


class ProviderError(ContextEngineError):
    """A model call failed; ``status`` is the HTTP status (if any), ``retryable`` whether a
    later attempt may succeed, ``retry_after_s`` the wait the server asked for (if any)."""

    retryable_by_default: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = self.retryable_by_default if retryable is None else retryable
        self.retry_after_s = retry_after_s


class MissingAPIKeyError(ProviderError):
    """The provider needs an API key that is not set."""


class ScriptExhaustedError(ProviderError):
    """The scripted provider was asked for more replies than it was given."""


class RateLimitError(ProviderError):
    """The provider refused the call for now (HTTP 429)."""

    retryable_by_default = True


class AuthError(ProviderError):
    """The provider refused the API key or its permissions (HTTP 401 / 403)."""


class BadRequestError(ProviderError):
    """The provider refused the request itself (a 4xx other than 401/403/408/429)."""


class ServerError(ProviderError):
    """The provider failed or is overloaded (HTTP 5xx, Anthropic's 529)."""

    retryable_by_default = True


class ProviderConnectionError(ProviderError):
    """The provider could not be reached."""

    retryable_by_default = True


class ProviderTimeoutError(ProviderConnectionError):
    """The provider did not answer in time (a client timeout or HTTP 408)."""


class BrokenReplyError(ProviderError):
    """A 200 reply that is not a complete, well-formed reply stream."""

    retryable_by_default = True
