"""The code map (R17.1) over a real Python + JavaScript + TypeScript workspace (real tree-sitter)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextengine.codemap import CodeMap, CodeMapUnavailable, grammars
from contextengine.codemap.rank import rank_definitions
from contextengine.context.tokens import count_tokens
from contextengine.memory.code_map import CodeMapInjector
from contextengine.memory.injectors import run_injectors
from contextengine.toolkit.workspace import Workspace

pytest.importorskip("tree_sitter_python", reason="the code map needs the 'codemap' extra")


def code_map(root: Path, budget: int = 1024) -> CodeMap:
    return CodeMap(Workspace(root), budget)


def test_definitions_and_references_are_read_from_each_language(code_ws: Path) -> None:
    files = code_map(code_ws).index.refresh()
    assert sorted(files) == [
        "shop/checkout.py",
        "shop/legacy.py",
        "shop/models.py",
        "web/app.js",
        "web/cart.js",
        "web/summary.ts",
        "web/types.ts",
    ], "hidden and dependency folders are skipped, non-source files ignored"
    models = {d.name: d for d in files["shop/models.py"].definitions}
    assert models["Cart"].category == "class"
    assert models["add_item"].text == "    def add_item(self, product: Product):"
    assert (models["Cart"].first, models["Cart"].last) == (9, 17)
    cart_js = {d.name: d.category for d in files["web/cart.js"].definitions}
    assert cart_js == {"CartView": "class", "render": "method", "formatPrice": "function"}
    types_ts = {d.name: d.category for d in files["web/types.ts"].definitions}
    assert types_ts == {"CartLine": "interface", "totalOf": "function"}
    checkout_uses = set(files["shop/checkout.py"].references)
    assert {"Cart", "format_price", "total_cents"} <= checkout_uses
    assert not {"shop", "models"} & checkout_uses, "an import's module path is no use of a name"
    assert {"CartView", "formatPrice", "render"} <= set(files["web/app.js"].references)
    assert "CartLine" in files["web/summary.ts"].references
    assert files["shop/checkout.py"].references.count("checkout_order") == 1, "its call only"


def ranked(root: Path, **focus) -> list[tuple[str, str]]:
    files = code_map(root).index.refresh()
    return [(p, n) for p, n, _s in rank_definitions(files, **focus).definitions]


def test_cross_file_uses_rank_first_and_unused_definitions_last(code_ws: Path) -> None:
    order = ranked(code_ws)
    used = {
        ("shop/models.py", "format_price"),
        ("web/cart.js", "formatPrice"),
        ("shop/models.py", "Cart"),
        ("web/cart.js", "CartView"),
        ("web/types.ts", "totalOf"),
    }
    assert set(order[: len(used) + 4]) >= used
    assert order.index(("shop/legacy.py", "unused_helper")) > max(order.index(u) for u in used)


def test_focus_on_a_file_ranks_what_it_uses_first(code_ws: Path) -> None:
    js = ranked(code_ws, focus_files={"web/app.js"})
    assert {js[0][0], js[1][0]} == {"web/cart.js"}
    py = ranked(code_ws, focus_files={"shop/checkout.py"})
    assert py[0] == ("shop/models.py", "format_price")
    assert all(path == "shop/models.py" for path, _ in py[:5])


def test_the_map_fits_its_budget_and_shows_scopes_with_line_numbers(code_ws: Path) -> None:
    view = code_map(code_ws).build(max_tokens=4096)
    assert view.definitions_shown == view.definitions_total
    assert view.tokens == count_tokens(view.text) <= 4096
    assert "shop/models.py:\n    4│class Product:\n" in view.text
    assert "   10│class Cart:\n" in view.text and "   17│    def total_cents(self):" in view.text
    small = code_map(code_ws).build(max_tokens=64)
    assert 0 < small.definitions_shown < view.definitions_shown
    assert small.tokens <= 64
    top_path = ranked(code_ws)[0][0]
    assert small.text.startswith(f"{top_path}:") or f"\n{top_path}:" in small.text


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 600), st.integers(1, 600))
def test_a_bigger_budget_never_shows_less_and_never_overflows(
    code_ws: Path, a: int, b: int
) -> None:
    small, large = sorted((a, b))
    cmap = code_map(code_ws)
    first, second = cmap.build(max_tokens=small), cmap.build(max_tokens=large)
    assert first.tokens <= small and second.tokens <= large
    assert first.definitions_shown <= second.definitions_shown


def test_files_are_parsed_again_only_when_they_change(code_ws: Path) -> None:
    cmap = code_map(code_ws)
    before = cmap.index.refresh()
    again = cmap.index.refresh()
    assert all(again[p] is before[p] for p in before), "unchanged files keep their parse"
    models = code_ws / "shop/models.py"
    models.write_text(models.read_text() + "\n\ndef refund_order(cart):\n    return 0\n")
    os.utime(models, ns=(1, 1))  # a new mtime even on a coarse clock
    after = cmap.index.refresh()
    assert after["shop/models.py"] is not before["shop/models.py"]
    assert "refund_order" in {d.name for d in after["shop/models.py"].definitions}
    assert after["web/app.js"] is before["web/app.js"]
    (code_ws / "shop/legacy.py").unlink()
    assert "shop/legacy.py" not in cmap.index.refresh()


def test_the_injector_adds_the_map_once_until_the_code_changes(code_ws: Path) -> None:
    injector = CodeMapInjector(code_map(code_ws, 512))
    first = run_injectors([injector], "hint one")
    (note,) = first.notes
    assert note.source == "code_map" and "shop/models.py:" in note.text
    seen = {(n.source, n.text) for n in first.notes}
    assert run_injectors([injector], "another hint entirely", seen).notes == ()
    (code_ws / "web/extra.js").write_text("export function brandNewThing() {}\n")
    (changed,) = run_injectors([injector], "hint one", seen).notes
    assert changed.text != note.text


def test_an_empty_workspace_injects_nothing(tmp_path: Path) -> None:
    assert CodeMapInjector(code_map(tmp_path)).inject("anything") is None


def test_a_map_is_ranked_again_only_after_a_change(code_ws: Path) -> None:
    cmap = code_map(code_ws)
    first = cmap.build()
    version = cmap.index.version
    assert cmap.build() is first and cmap.index.version == version
    assert cmap.build(focus_files={"web/app.js"}) is not first
    (code_ws / "web/more.ts").write_text("export function totalOfAll() { return totalOf([]); }\n")
    changed = cmap.build()
    assert cmap.index.version == version + 1
    assert changed is not first and changed.files_parsed == first.files_parsed + 1


def test_without_the_grammars_the_map_says_which_extra_to_install(
    code_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grammars.grammar.cache_clear()
    monkeypatch.setitem(sys.modules, "tree_sitter_python", None)
    try:
        with pytest.raises(CodeMapUnavailable, match=r"pip install 'contextengine\[codemap\]'"):
            code_map(code_ws).build()
    finally:
        grammars.grammar.cache_clear()
