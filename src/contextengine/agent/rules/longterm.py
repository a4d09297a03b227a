"""Long-term memory: each turn's end indexes the session for later sessions to search."""

from __future__ import annotations

from functools import partial

from contextengine.agent.events import RunResult
from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.memory.longterm import LongTermMemory, session_documents
from contextengine.memory.working_memory import FINDINGS


class LongTermIndex(Rule):
    """Indexes the session's records and findings into ``store`` at every turn's end."""

    def __init__(self, ctx: HarnessContext, store: LongTermMemory) -> None:
        super().__init__(ctx)
        self.store = store

    def end_turn(self, result: RunResult) -> HookResult:
        """Index the session."""
        ctx = self.ctx
        docs = session_documents(ctx.session.records, ctx.memory.read(FINDINGS))
        ctx.guarded("indexing long-term memory", partial(self.store.index_session, docs))
        return NOTHING
