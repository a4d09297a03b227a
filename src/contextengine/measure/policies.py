"""Production context policies as replay baselines: each one's published defaults, as data.

A policy combines up to three moves, applied by ``measure.policy_replay`` to the requests
of the ``full_history`` replay:

* ``Spill``: a tool result above a size is replaced, from the request it first appears in,
  by a stub (a path and a preview), so the history stays append-only;
* ``Clear``: once a request reaches a trigger, older tool results become a placeholder
  (a rewrite of history: the cache breaks at the first changed result);
* ``Compact``: once a request reaches a trigger, a span of history is replaced by a
  summary, asked of the model in a side call.

Every number below is cited in ``docs/baselines.md`` (repository, file and line, or URL).
"""

from __future__ import annotations

from dataclasses import dataclass

SUMMARY_BUDGET_TOKENS = 4_000


@dataclass(frozen=True)
class Preview:
    """What a stub or placeholder keeps of the text it replaces: head and tail, in
    characters or lines (lines are cut to ``line_chars``)."""

    head_chars: int = 0
    tail_chars: int = 0
    head_lines: int = 0
    tail_lines: int = 0
    line_chars: int = 1_000

    def of(self, text: str) -> str:
        """The preview of ``text`` (all of it when it is no longer than the preview)."""
        if self.head_lines or self.tail_lines:
            lines = text.splitlines()
            if len(lines) <= self.head_lines + self.tail_lines:
                return "\n".join(line[: self.line_chars] for line in lines)
            omitted = len(lines) - self.head_lines - self.tail_lines
            head = [line[: self.line_chars] for line in lines[: self.head_lines]]
            tail = [line[: self.line_chars] for line in lines[len(lines) - self.tail_lines :]]
            return "\n".join([*head, f"... [{omitted} lines truncated] ...", *tail])
        if len(text) <= self.head_chars + self.tail_chars:
            return text
        end = text[len(text) - self.tail_chars :] if self.tail_chars else ""
        return f"{text[: self.head_chars]}\n... [truncated] ...\n{end}".rstrip("\n")


@dataclass(frozen=True)
class Spill:
    """Tool results longer than ``over_chars`` become ``template`` when they first appear
    (fields: ``{path}``, ``{chars}``, ``{preview}``)."""

    over_chars: int
    template: str
    preview: Preview


@dataclass(frozen=True)
class Clear:
    """At ``trigger_tokens`` (0: always), older tool results become ``template``
    (fields: ``{lines}``, ``{preview}``, ``{path}``).

    The newest ``keep_results`` results, or the newest ``keep_tool_tokens`` tokens of
    results, stay (the result that crosses that line is cleared); with ``protect_latest``
    the request's last message is never cleared; with ``only_if_shorter`` a result whose
    placeholder would not be shorter stays. Nothing is cleared unless at least
    ``min_cleared_tokens`` would be. Once cleared, a result stays cleared.
    """

    template: str
    trigger_tokens: int = 0
    keep_results: int | None = None
    keep_tool_tokens: int | None = None
    min_cleared_tokens: int = 0
    protect_latest: bool = False
    only_if_shorter: bool = False
    preview: Preview = Preview()


@dataclass(frozen=True)
class Compact:
    """At a trigger, history is replaced by a summary (``SUMMARY_BUDGET_TOKENS``).

    Triggers (the first reached): ``trigger_tokens``; ``trigger_share`` of the window;
    the window minus ``trigger_reserve``; more than ``trigger_messages`` messages. What
    stays: the system prompt; the first ``keep_first`` messages after it; the newest user
    messages up to ``keep_user_tokens``; and a tail of the history, the smallest that the
    rules of the triggers reached give: ``keep_messages`` messages (message trigger);
    ``keep_window_share`` of the window in tokens, or (``split_at_user``) history from
    the first user message past ``1 - keep_history_share`` of its characters (token
    trigger). No rule, no tail. A tail never starts with a tool result.
    ``summary_reads_cache``: the summary request is the request itself plus an
    instruction (it reads the cached prefix); otherwise a fresh prompt holding the span.
    ``summary_calls``: requests made per summary (a verification pass reads the first).
    """

    trigger_tokens: int | None = None
    trigger_share: float | None = None
    trigger_reserve: int | None = None
    trigger_messages: int | None = None
    keep_first: int = 0
    keep_user_tokens: int = 0
    keep_messages: int | None = None
    keep_window_share: float | None = None
    keep_history_share: float | None = None
    split_at_user: bool = False
    summary_reads_cache: bool = True
    summary_calls: int = 1

    def threshold(self, window: int) -> int | None:
        """The token trigger for a ``window``-token context (``None``: no token trigger)."""
        found = [
            t
            for t in (
                self.trigger_tokens,
                None if self.trigger_share is None else int(window * self.trigger_share),
                None if self.trigger_reserve is None else window - self.trigger_reserve,
            )
            if t is not None
        ]
        return min(found) if found else None


@dataclass(frozen=True)
class Policy:
    """One production policy: its name under ``baselines`` and its moves."""

    name: str
    spill: Spill | None = None
    clear: Clear | None = None
    compact: Compact | None = None


POLICIES: tuple[Policy, ...] = (
    Policy(
        "anthropic_context_editing",
        clear=Clear(template="[cleared]", trigger_tokens=100_000, keep_results=3),
    ),
    Policy("anthropic_compaction", compact=Compact(trigger_tokens=150_000)),
    Policy(
        "claude_code",
        spill=Spill(
            over_chars=50_000,
            template="<persisted-output>\nOutput too large ({chars} characters). Full output "
            "saved to: {path}\n\nPreview (first 2KB):\n{preview}\n...\n</persisted-output>",
            preview=Preview(head_chars=2_000),
        ),
        compact=Compact(trigger_reserve=20_000 + 13_000),
    ),
    Policy(
        "codex",
        spill=Spill(
            # 10,000 tokens at Codex's 4 bytes a token; the head and tail halves stay
            over_chars=4 * 10_000,
            template="{preview}",
            preview=Preview(head_chars=20_000, tail_chars=20_000),
        ),
        compact=Compact(trigger_share=0.9, keep_user_tokens=20_000),
    ),
    Policy(
        "gemini_cli",
        clear=Clear(
            template="<tool_output_masked>\n{preview}\n\nOutput too large. Full output "
            "available at: {path}\n</tool_output_masked>",
            keep_tool_tokens=50_000,
            min_cleared_tokens=30_000,
            protect_latest=True,
            only_if_shorter=True,
            preview=Preview(head_chars=250, tail_chars=250),
        ),
        compact=Compact(
            trigger_share=0.5,
            keep_history_share=0.3,
            split_at_user=True,
            summary_reads_cache=False,
            summary_calls=2,
        ),
    ),
    Policy(
        "deepagents",
        spill=Spill(
            over_chars=4 * 20_000,
            template="Tool result too large, saved to {path}. Read it with read_file, a "
            "part at a time (offset and limit). Head and tail of the result:\n{preview}",
            preview=Preview(head_lines=5, tail_lines=5),
        ),
        compact=Compact(trigger_share=0.85, keep_window_share=0.10, summary_reads_cache=False),
    ),
    Policy(
        "openhands_condenser",
        compact=Compact(
            trigger_messages=240,
            trigger_share=1.0,
            # keep_first=2 events: the system prompt and the task
            keep_first=1,
            keep_messages=240 // 2 - 2 - 1,
            keep_window_share=0.5,
            summary_reads_cache=False,
        ),
    ),
    Policy(
        "observation_masking",
        clear=Clear(template="Old environment output: ({lines} lines omitted)", keep_results=10),
    ),
)
