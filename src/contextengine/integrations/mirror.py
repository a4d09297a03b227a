"""A framework's conversation, mirrored into a session and rebuilt by the engine's rules.

An agent framework keeps its own message history and calls the model with all of it. A
``ContextMirror`` receives that history before each model call, in the provider-neutral
OpenAI chat form (the framework's adapter converts), appends what is new to a contextengine
``Session``, and returns what the engine's ``ContextBuilder`` makes of the session: tool
arguments as canonical JSON, big tool outputs externalized to artifacts (recoverable with
``file_read``), old context pruned when the cache pays for it (``Pruner``), and the
task-status tail when the model keeps a todo list whose status has something to say and
is out of recent view (see ``ContextMirror._tail``). Every message it returned once it
returns again, byte for byte, until a pruning (a deliberate, counted rewrite), so the
framework's requests stay append-only and its provider's prompt cache keeps hitting.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from contextengine.canonical import canonical_json
from contextengine.compress.delta import shown_results
from contextengine.compress.externalize import Externalizer, UnrecoverableRef
from contextengine.compress.observation import ObservationProcessor
from contextengine.compress.prune import Pruner, PruneSettings
from contextengine.compress.topic import user_text
from contextengine.config import Config
from contextengine.context.builder import (
    BuilderSettings,
    ContextBuilder,
    FullObservation,
    LiveContext,
)
from contextengine.errors import ContextEngineError
from contextengine.memory.plan import Plan, apply_todos
from contextengine.memory.status import TailRecital
from contextengine.prices import CachePolicy
from contextengine.session.entries import (
    AssistantEntry,
    Entry,
    NoteEntry,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.session.render import RenderStyle
from contextengine.session.session import Session
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import UNDECLARED
from contextengine.tools.todo import TODO_TOOL_NAMES, plan_items

ERROR_STATUS = "status"
"""Key an adapter may set to ``"error"`` on a neutral tool message: the call failed (kept verbatim)."""


class MissingIntegration(ContextEngineError):
    """An integration's framework is not installed."""


def require(module: str, extra: str) -> None:
    """Raise ``MissingIntegration`` naming the extra to install when ``module`` is missing."""
    try:
        __import__(module)
    except ImportError:
        raise MissingIntegration(
            f"{module} is not installed: pip install 'contextengine[{extra}]'"
        ) from None


class ContextMirror:
    """One framework conversation as a contextengine session; ``view`` builds each call's messages.

    Session folders live under ``directory`` (a new one when the framework rewrites its own
    history, e.g. by its own compaction). ``session_key`` is what the adapters send as the
    provider's ``prompt_cache_key`` (default: the first session's id). ``model`` is the
    model's name, whose cache prices (genai-prices) pruning weighs unless ``config`` sets them.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        config: Config | None = None,
        session_key: str | None = None,
        display: Callable[[Path], str] = str,
        model: str = "",
    ) -> None:
        self._directory = Path(directory)
        self._config = config if config is not None else Config.load()
        self._model = model
        self._display = display
        self._parts = 0
        self._start()
        self.session_key = session_key or self.session.id

    def _start(self) -> None:
        style = RenderStyle(protocol="native", diversity=False)  # the framework's own framing
        self.session = Session.create(self._directory / f"part-{self._parts:03d}", style=style)
        self._parts += 1
        self.externalizer = Externalizer(self.session.layout.artifacts, self._display)
        self._processor = ObservationProcessor(
            self.externalizer,
            mode=self._config.effective_history_mode,
            externalize=self._config.flags.externalize,
            traits=lambda _name: UNDECLARED,
            shown=partial(shown_results, self.session) if self._config.flags.deltas else tuple,
            topic=partial(user_text, self.session),
        )
        config = self._config
        # the framework's provider is not ours to ask: its model's prices, the cache
        # lifetime the config sets (else the default)
        cache = CachePolicy.of_model(self._model).overridden(
            config.cache_expiry_s, config.cache_read_price, config.cache_write_price
        )
        self.pruner = Pruner(self.session, config.settings(PruneSettings), self.externalizer, cache)
        self._builder = ContextBuilder(system_prompt="", settings=config.settings(BuilderSettings))
        self._seen: list[Mapping[str, Any]] = []  # the framework's messages mirrored so far
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._plan = Plan()
        self._first_user: str | None = None
        self._recital = TailRecital()
        self._iterations = 0
        self._wrote_plan = False
        self._since_plan = 0  # characters mirrored since the plan was last in view

    def view(self, messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The messages to send now for the framework's ``messages`` (OpenAI chat form).

        Leading system messages are the framework's and pass through unchanged; the rest is
        mirrored (what is new since the last call is appended) and rebuilt.
        """
        lead = 0
        while lead < len(messages) and messages[lead].get("role") == "system":
            lead += 1
        rest = messages[lead:]
        if list(rest[: len(self._seen)]) != self._seen:
            self.session.close()
            self._start()
        fresh: dict[int, FullObservation] = {}
        self._wrote_plan = False
        for message in rest[len(self._seen) :]:
            self._absorb(message, fresh)
            self._seen.append(dict(message))
            self._since_plan += len(json.dumps(message, default=str))
        if (decision := self.pruner.decide()) is not None:
            self.pruner.prune(decision)
        live = LiveContext(full_observations=fresh, tail=self._tail())
        self._iterations += 1
        request = self._builder.build(self.session, live)
        rebuilt: list[Mapping[str, Any]] = [dict(m) for m in messages[:lead]]
        return rebuilt + request.messages[request.segments.l1 :]

    def file_read(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        """Read a saved tool output or pruned text (the path a compressed_ref or stub names),
        lines ``start_line`` to ``end_line`` (1-based, inclusive)."""
        saved = Path(path)
        if self.externalizer.display(self.externalizer.artifacts_dir / saved.name) != path:
            raise UnrecoverableRef(f"{path} is not a saved output of this session")
        try:
            lines = saved.read_text(encoding="utf-8").splitlines(keepends=True)
        except FileNotFoundError:
            raise UnrecoverableRef(f"saved output {path} is missing") from None
        return "".join(lines[max(start_line, 1) - 1 : end_line])

    def close(self) -> None:
        """Close the session log."""
        self.session.close()

    def _absorb(self, message: Mapping[str, Any], fresh: dict[int, FullObservation]) -> None:
        role = message.get("role")
        text = _text(message.get("content"))
        entry: Entry
        if role == "user":
            if self._first_user is None:
                self._first_user = text
            entry = UserEntry(text=text)
        elif role == "assistant":
            entry = AssistantEntry(text=text, tool_calls=tuple(self._calls_of(message)))
        elif role == "tool":
            entry = self._result(message, text, fresh)
        else:
            entry = NoteEntry(source=str(role), text=text)
        self.session.append(entry)

    def _calls_of(self, message: Mapping[str, Any]) -> Iterable[ToolCallRecord]:
        for call in message.get("tool_calls") or ():
            function = call["function"]
            raw = function.get("arguments") or "{}"
            try:
                arguments = json.loads(raw)
            except ValueError:
                arguments = None  # sent back as it came: the model sees its own mistake
            name = function["name"]
            self._calls[call["id"]] = (name, arguments if isinstance(arguments, dict) else {})
            if (
                name.lower() in TODO_TOOL_NAMES
                and isinstance(arguments, dict)
                and (items := plan_items(arguments)) is not None
            ):
                self._plan = apply_todos(self._plan, items)
                self._wrote_plan = True
            as_json = raw if arguments is None else canonical_json(arguments)
            yield ToolCallRecord(id=call["id"], name=name, arguments_json=as_json)

    def _result(
        self, message: Mapping[str, Any], text: str, fresh: dict[int, FullObservation]
    ) -> ToolResultEntry:
        call_id = str(message.get("tool_call_id", ""))
        name, arguments = self._calls.get(call_id, ("tool", {}))
        if message.get(ERROR_STATUS) == "error":
            return ToolResultEntry(call_id=call_id, tool_name=name, status="error", content=text)
        index = len(self.session.records)
        processed = self._processor.process(index, name, arguments, ToolOutcome.ok(text))
        if processed.live != processed.history:
            fresh[index] = FullObservation(name, call_id, processed.live)
        return ToolResultEntry(
            call_id=call_id,
            tool_name=name,
            status="success",
            content=processed.history,
            full_ref=processed.full_ref,
            original_length=processed.original_length,
        )

    def _tail(self) -> str | None:
        """The full status when it has something to say and the plan is out of recent view.

        The framework's requests are left as they are otherwise: right after the model's
        own todo call the plan ends the request already (it counts as recited), and within
        ``Config.recite_after_chars`` (characters of messages) of where the plan was last
        in view, the model's recent view, reciting it again would
        only be paid for.
        """
        if not self._plan.steps or not self._config.flags.recitation:
            return None
        if self._wrote_plan:
            self._since_plan = 0
            self._recital.recital(self._plan, self._first_user, self._iterations, just_written=True)
            return None
        if self._since_plan < self._config.recite_after_chars:
            return None
        tail = self._recital.recital(self._plan, self._first_user, self._iterations)
        if tail is not None:
            self._since_plan = 0
        return tail


def _text(content: Any) -> str:
    """A message's content as text (the text parts of a list of parts)."""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)
