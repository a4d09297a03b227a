"""No import cycles between the modules of src/contextengine, nor between its packages.

Imports are read with ``ast``, so the test sees every import statement, not only the ones a
test run happens to execute:

- an import inside a function counts like a top-level one: it is a runtime dependency, only
  deferred (the CLI defers heavy imports this way), and a deferred cycle still couples both ends;
- an import under ``if TYPE_CHECKING:`` counts too: it never runs, but it ties the two modules
  as much as a runtime one (one cannot be read, moved or tested without the other);
- importing ``contextengine.pkg.mod`` also runs ``contextengine/pkg/__init__.py``, so the module
  depends on that ``__init__`` too (unless the module lives in that package, whose
  ``__init__`` has already started running before the module's body); the root ``contextengine/__init__.py`` is the public facade
  that re-exports everything and nothing inside the package imports it, so it is left out.

At package level each subpackage (``agent``, ``context``, ...) and each top-level module
(``config``, ``errors``, ...) is one node; ``LAYERS`` is the order drawn in
docs/architecture.md and every import goes from a later layer to an earlier one; no two
packages import each other, and the packages in ``TOOL_FREE`` import nothing from ``tools``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Set
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "contextengine"

# Lowest first; a package may import only from earlier layers (same layer: neither way).
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "errors untrusted text",
        "types canonical",
        "toolkit",
        "config prices",
        "session",
        "context",
        "local",
        "codemap",
        "compress memory providers",
        "tools",
        "agent integrations",
        "measure",
        "workers",
        "server demo cli_printer",
        "proxy",
        "cli",
        "__main__",
    )
)

TOOL_FREE = frozenset({"providers", "compress", "context", "session", "memory"})
"""Packages below ``tools`` that stand on ``toolkit`` and never reach into the tools."""


def module_name(path: Path) -> str:
    """Dotted module name of a source file under ``SRC``."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules() -> dict[str, Path]:
    """Every module of the package except the root facade, by dotted name."""
    modules = {module_name(p): p for p in (SRC / ROOT).rglob("*.py")}
    modules.pop(ROOT)
    return modules


def imported_names(name: str, path: Path) -> set[str]:
    """Dotted names ``name`` imports at runtime (a ``from m import x`` gives ``m.x`` and ``m``)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + is_package]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def module_graph() -> dict[str, set[str]]:
    """Module -> modules of the package it imports, with the ``__init__`` each import runs."""
    modules = source_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for imported in imported_names(name, path):
            parts = imported.split(".")
            targets.update(".".join(parts[:n]) for n in range(2, len(parts) + 1))
        # A module's own packages are already initialized before its body runs.
        ancestors = {name.rsplit(".", n)[0] for n in range(1, name.count("."))}
        graph[name] = {t for t in targets if t in modules and t != name and t not in ancestors}
    return graph


def package_of(module: str) -> str:
    """The package-level node of a module: its subpackage or its own top-level name."""
    return module.split(".")[1]


def package_graph(modules: Mapping[str, Set[str]]) -> dict[str, set[str]]:
    """Package -> packages it imports, from the module graph."""
    graph: dict[str, set[str]] = {package_of(m): set() for m in modules}
    for source, targets in modules.items():
        graph[package_of(source)].update(
            package_of(t) for t in targets if package_of(t) != package_of(source)
        )
    return graph


def find_cycle(graph: Mapping[str, Set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a closed path, or None when it is acyclic."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done and (cycle := visit(nxt)):
                return cycle
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (cycle := visit(start)):
            return cycle
    return None


def test_find_cycle_reports_a_closed_path() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_imports_are_read_like_python_runs_them(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from contextengine.tools import spec\n"
        "from . import sibling\n"
        "if TYPE_CHECKING:\n"
        "    from contextengine.agent.loop import Agent\n"
        "def later():\n"
        "    import contextengine.measure.report\n",
        encoding="utf-8",
    )
    names = imported_names("contextengine.session.mod", module)
    assert {"contextengine.tools.spec", "contextengine.session.sibling"} <= names
    assert "contextengine.measure.report" in names
    assert "contextengine.agent.loop" in names


def test_no_module_import_cycle() -> None:
    cycle = find_cycle(module_graph())
    assert cycle is None, "module import cycle: " + " -> ".join(cycle or [])


def test_no_package_import_cycle() -> None:
    cycle = find_cycle(package_graph(module_graph()))
    assert cycle is None, "package import cycle: " + " -> ".join(cycle or [])


def test_imports_go_down_the_documented_layers() -> None:
    rank = {package: n for n, layer in enumerate(LAYERS) for package in layer}
    packages = package_graph(module_graph())
    assert set(packages) <= set(rank), f"packages missing from LAYERS: {set(packages) - set(rank)}"
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in packages.items()
        for target in targets
        if rank[target] >= rank[source]
    )
    assert not upward, f"imports against the layers of docs/architecture.md: {upward}"


def test_no_two_packages_import_each_other() -> None:
    packages = package_graph(module_graph())
    mutual = sorted(
        f"{source} <-> {target}"
        for source, targets in packages.items()
        for target in targets
        if source < target and source in packages.get(target, set())
    )
    assert not mutual, f"packages that import each other: {mutual}"


def test_tool_free_packages_import_nothing_from_tools() -> None:
    reaching = sorted(
        f"{source} -> {target}"
        for source, targets in module_graph().items()
        if package_of(source) in TOOL_FREE
        for target in targets
        if package_of(target) == "tools"
    )
    assert not reaching, f"imports of contextengine.tools from {sorted(TOOL_FREE)}: {reaching}"


CONFIG_READERS: dict[str, str] = {
    ROOT: "the public facade re-exports Config",
    f"{ROOT}.agent.parts": "the assembler: builds each component's settings from a Config",
    f"{ROOT}.cli": "loads the Config from file, environment and options",
    f"{ROOT}.server.app": "loads the server's Config and makes its agents with it",
    f"{ROOT}.agent.loop": "Agent(provider, workspace, config) and Agent.resume take one",
    f"{ROOT}.integrations.mirror": "ContextMirror(config=...) takes one (else loads it)",
}
"""The modules that import ``contextengine.config``, and why; every other component gets
its own settings (a frozen dataclass or a protocol of the fields it reads) from them, and a
driver that makes agents without reading the config (the replay) holds an ``AgentRecipe``."""

MOST_CONFIG_READERS = 6  # issue 34: "at most 6 modules import contextengine.config"


def reads_config(name: str, path: Path) -> bool:
    """Whether module ``name`` at ``path`` reaches ``contextengine.config``: imports it or a
    name of it (under ``TYPE_CHECKING`` or not), takes a ``Config`` from any module of the
    package (the facade, or one passing it on), reads ``Config`` as an attribute of an
    imported module, or names the module in a string (``importlib.import_module``)."""
    config = f"{ROOT}.config"
    names = imported_names(name, path)
    if any(
        n == config or n.startswith(f"{config}.") or (n.startswith(ROOT) and n.endswith(".Config"))
        for n in names
    ):
        return True
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound = _names_bound_to_the_package(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == config:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "Config":
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                return True
    return False


def _names_bound_to_the_package(tree: ast.Module) -> set[str]:
    """The local names an import binds to a module or object of the package."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update(
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name.split(".")[0] == ROOT
            )
        elif isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").split(".")[0] == ROOT
        ):
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound


def config_importers() -> set[str]:
    """Modules (the root facade included) that reach ``contextengine.config``."""
    modules = {**source_modules(), ROOT: SRC / ROOT / "__init__.py"}
    return {name for name, path in modules.items() if reads_config(name, path)}


def test_config_importers_are_counted_like_python_reads_them(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    ways = {
        "typing": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from ..config import Config\n",
        "facade": "from contextengine import Config\n",
        "reexport": "from contextengine.agent.parts import Config as Settings\n",
        "attribute": "from contextengine.agent import parts\nSettings = parts.Config\n",
        "module": "import contextengine.agent.parts as p\nx: p.Config\n",
        "string": "import importlib\nm = importlib.import_module('contextengine.config')\n",
    }
    for way, source in ways.items():
        (package / f"{way}.py").write_text(source)
        assert reads_config(f"{ROOT}.pkg.{way}", package / f"{way}.py"), f"{way} counts"
    (package / "other.py").write_text(
        "import uvicorn\nfrom contextengine import errors\nc = uvicorn.Config\n"
    )
    assert not reads_config(f"{ROOT}.pkg.other", package / "other.py"), "another Config"


def test_only_the_assemblers_import_the_config() -> None:
    found = config_importers()
    assert found <= set(CONFIG_READERS), f"new importers: {sorted(found - set(CONFIG_READERS))}"
    assert found == set(CONFIG_READERS), "a module no longer needs it: drop its row"
    assert len(CONFIG_READERS) <= MOST_CONFIG_READERS


def test_providers_import_nothing_from_session() -> None:
    """Adapters read a request's typed messages (``types.Message``), never the record."""
    reaching = sorted(
        f"{source} -> {target}"
        for source, targets in module_graph().items()
        if package_of(source) == "providers"
        for target in targets
        if package_of(target) == "session"
    )
    assert not reaching, f"providers importing session: {reaching}"
