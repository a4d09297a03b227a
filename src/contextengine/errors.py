"""The library's exception tree.

Three families, kept apart on purpose:

* ``ContextEngineError`` and its subclasses are raised to the *user* of the library.
  Each carries a one-line message that names the problem (a file, a line, a field).

      ContextEngineError
      ├── ConfigError            bad config file, unknown key, bad env value
      ├── SessionLogError        a corrupt session log line (file and line named)
      ├── TrajectoryError        a malformed trajectory file (file and field named)
      ├── ProviderError          a model call failed after retries (mapped with ``raise ... from``)
      │   ├── MissingAPIKeyError
      │   └── ScriptExhaustedError
      └── WorkspaceError         a path outside the workspace, used outside a tool call

* Tool-facing errors are *values* (``contextengine.tools.ToolError``) with literal codes a
  model can read; they are never raised through the loop.

* Control signals for the agent loop live in ``contextengine.agent`` and never escape it.
"""

from __future__ import annotations


class ContextEngineError(Exception):
    """Base class of every error the library raises to its user."""


class ConfigError(ContextEngineError):
    """The configuration file or an environment override is invalid."""


class SessionLogError(ContextEngineError):
    """A session log cannot be read: names the file and the line."""


class TrajectoryError(ContextEngineError):
    """A trajectory file is malformed: names the file and the field."""


class ProviderError(ContextEngineError):
    """A model call failed (after the provider's own retries)."""


class MissingAPIKeyError(ProviderError):
    """The provider needs an API key that is not set."""


class ScriptExhaustedError(ProviderError):
    """The scripted provider was asked for more replies than it was given."""


class WorkspaceError(ContextEngineError):
    """A path resolves outside the workspace."""
