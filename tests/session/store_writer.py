"""One writer of ``test_two_processes_appending_keep_one_ordered_record``.

Usage: ``store_writer.py STORE FOLDER TAG START COUNT``: appends COUNT user entries
``TAG-<index>`` at indices START on, each at the index it expects; prints how many were written,
already there (the same entry) and refused (another writer's entry at that index).
"""

from __future__ import annotations

import json
import sys

from contextengine.config import Config
from contextengine.errors import AppendConflictError
from contextengine.session.entries import UserEntry
from contextengine.session.log import LogRecord
from contextengine.session.render import RenderStyle, render_entry
from contextengine.session.session import Session
from contextengine.session.store.choice import open_store


def main(setting: str, folder: str, tag: str, start: int, count: int) -> None:
    """Append and report."""
    session = Session.open(folder, open_store(Config(store=setting)))
    counts = {"written": 0, "repeated": 0, "conflicts": 0}
    for index in range(start, start + count):
        entry = UserEntry(text=f"{tag}-{index}")
        record = LogRecord.make(index, entry, render_entry(entry, index, session.id, RenderStyle()))
        try:
            written = session.stored.append(record)
        except AppendConflictError:
            counts["conflicts"] += 1
            continue
        counts["written" if written else "repeated"] += 1
    session.close()
    print(json.dumps(counts))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
