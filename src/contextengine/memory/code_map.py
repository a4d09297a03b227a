"""The code map as a context injector (R17.1).

Once per user turn the harness asks it for the map. The map depends on the files alone
(never on the hint), so while no source file changed it is the same text, the harness
sees the note already in view and appends nothing: the map is paid for once and read
from the cache after that. A change to the code appends the new map once.
"""

from __future__ import annotations

from contextengine.codemap.code_map import CodeMap

HEADING = "Code map of the workspace (most-used definitions; line│source):"


class CodeMapInjector:
    """Injects the workspace's code map within the map's token budget."""

    name = "code_map"

    def __init__(self, code_map: CodeMap) -> None:
        self.code_map = code_map

    def inject(self, hint: str) -> str | None:
        """The map under a heading, or ``None`` when there is no parsed definition."""
        view = self.code_map.build()
        return f"{HEADING}\n{view.text}" if view.text else None
