"""PageRank and definition ranking of the code map (R17.1) over hand-made tags."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextengine.codemap.rank import Edge, pagerank, rank_definitions
from contextengine.codemap.tags import Definition, FileTags


def tags(path: str, defines: list[str], uses: list[str]) -> FileTags:
    definitions = tuple(
        Definition(n, "function", i, i, i, f"def {n}():") for i, n in enumerate(defines)
    )
    return FileTags(path, definitions, tuple(uses))


def test_pagerank_matches_the_closed_form_of_a_two_node_cycle() -> None:
    ranks = pagerank(["a", "b"], [Edge("a", "b", "x", 1.0), Edge("b", "a", "y", 1.0)])
    assert ranks == pytest.approx({"a": 0.5, "b": 0.5})


def test_pagerank_sends_rank_to_the_used_node_and_jumps_to_the_focus() -> None:
    edges = [Edge("a", "c", "x", 1.0), Edge("b", "c", "x", 1.0)]
    plain = pagerank(["a", "b", "c"], edges)
    assert plain["c"] > plain["a"] == pytest.approx(plain["b"])
    focused = pagerank(["a", "b", "c"], edges, {"a": 1.0})
    assert focused["a"] > focused["b"]


@given(
    st.lists(
        st.tuples(st.sampled_from("abcde"), st.sampled_from("abcde"), st.floats(0.01, 100.0)),
        max_size=20,
    ),
    st.dictionaries(st.sampled_from("abcde"), st.floats(0.0, 10.0), max_size=5),
)
def test_pagerank_is_a_distribution(raw_edges, focus) -> None:
    edges = [Edge(s, t, "n", w) for s, t, w in raw_edges]
    ranks = pagerank("abcde", edges, focus or None)
    assert sum(ranks.values()) == pytest.approx(1.0)
    assert all(r >= 0 for r in ranks.values())


FILES = {
    "lib.py": tags("lib.py", ["parse_config", "helper"], []),
    "util.py": tags("util.py", ["shared_tool", "lonely_function"], ["helper"]),
    "main.py": tags("main.py", ["main"], ["parse_config", "parse_config", "shared_tool"]),
    "other.py": tags("other.py", ["other"], ["shared_tool", "main"]),
}


def names(ranking) -> list[str]:
    return [name for _path, name, _score in ranking.definitions]


def test_used_definitions_come_before_unused_ones() -> None:
    order = names(rank_definitions(FILES))
    assert set(order[:4]) == {"parse_config", "helper", "shared_tool", "main"}
    assert set(order[4:]) == {"lonely_function", "other"}
    assert len(order) == len(set(order)) == 6


def test_a_use_inside_the_defining_file_does_not_count() -> None:
    files = {"a.py": tags("a.py", ["self_used"], ["self_used"] * 5), **FILES}
    assert "self_used" in names(rank_definitions(files))[4:]


def test_focus_files_and_names_pull_their_definitions_up() -> None:
    assert names(rank_definitions(FILES, focus_files={"util.py"}))[0] == "helper"
    assert names(rank_definitions(FILES, focus_files={"other.py"}))[0] in {"shared_tool", "main"}
    assert names(rank_definitions(FILES, focus_names={"helper"}))[0] == "helper"


def test_the_ranking_is_deterministic() -> None:
    shuffled = dict(reversed(list(FILES.items())))
    assert rank_definitions(FILES) == rank_definitions(shuffled)
