"""Versioned working memory: each turn that changed the memory files ends with a git commit."""

from __future__ import annotations

import logging
import subprocess

from contextengine.agent.events import RunResult
from contextengine.agent.hooks import NOTHING, HookResult
from contextengine.agent.rules.base import HarnessContext, Rule
from contextengine.memory.versions import MemoryRepo
from contextengine.session.entries import UserEntry
from contextengine.text import one_line

logger = logging.getLogger(__name__)

SUBJECT_CHARS = 72


class MemoryVersions(Rule):
    """Commits the memory files to ``repo`` at every turn's end, the message naming the
    turn (``turn 3: <its request>``); a failing git is logged, never stops the turn."""

    def __init__(self, ctx: HarnessContext, repo: MemoryRepo) -> None:
        super().__init__(ctx)
        self.repo = repo
        self._subject = ""

    def start_turn(self, user_text: str) -> HookResult:
        """Name the turn: its number among the session's user messages and its request."""
        number = sum(isinstance(r.entry, UserEntry) for r in self.ctx.session.records)
        request = one_line(user_text.strip().split("\n", 1)[0])
        self._subject = f"turn {number}: {request}"[:SUBJECT_CHARS]
        return NOTHING

    def end_turn(self, result: RunResult) -> HookResult:
        """Commit what the turn changed in the memory files."""
        message = f"{self._subject}\n\nstatus: {result.status}, steps: {result.steps}"
        try:
            self.repo.commit(message)
        except (OSError, subprocess.SubprocessError) as exc:
            logger.warning("committing the memory files failed and was skipped: %s", exc)
        return NOTHING
