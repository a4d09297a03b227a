"""The served process's warm-up: tables loaded before the first turn, then left out of GC."""

from __future__ import annotations

import gc
import weakref

from contextengine.server.run import warm_up


class _Node:
    """A container the collector tracks; a pair of them referring to each other is a cycle."""

    def __init__(self) -> None:
        self.other: _Node | None = None


def test_what_is_loaded_before_serving_is_left_out_of_every_full_collection() -> None:
    loaded_before = _Node()
    try:
        warm_up()
        walked = {id(o) for o in gc.get_objects()}
        assert id(loaded_before) not in walked
        created_after = _Node()
        assert any(o is created_after for o in gc.get_objects())
        # What the turns create is still collected: a cycle made after warm-up goes.
        first, second = _Node(), _Node()
        first.other, second.other = second, first
        gone = weakref.ref(first)
        del first, second
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
