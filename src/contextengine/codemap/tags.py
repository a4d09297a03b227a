"""One source file's definitions and references, read from its tree-sitter parse."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contextengine.codemap.grammars import Grammar

LINE_CHARS = 100  # a minified or generated line is cut, as it says nothing more past this
# Python's import statements name modules, not definitions: ``from pkg.mod import Name``
# uses ``Name`` but not a function that happens to be called ``pkg``.
_MODULE_PATH_PARTS = frozenset({"dotted_name", "aliased_import", "relative_import"})
# Identifiers that are no use of a definition elsewhere: an attribute read (``obj.text``
# names no particular ``text``; a called one is a query reference), a keyword argument's
# name, and names bound here (assignment targets, loop variables, parameters).
_NOT_USES: dict[str, tuple[str, ...]] = {
    "attribute": ("attribute",),
    "keyword_argument": ("name",),
    "assignment": ("left",),
    "for_statement": ("left",),
    "default_parameter": ("name",),
    "typed_default_parameter": ("name",),
    "variable_declarator": ("name",),
    "required_parameter": ("pattern",),
    "optional_parameter": ("pattern",),
}
_PARAMETER_LISTS = frozenset(
    {"parameters", "typed_parameter", "lambda_parameters", "formal_parameters"}
)


@dataclass(frozen=True)
class Definition:
    """A name a file defines: its kind (``class``, ``function``, ``method`` ...), the
    0-based row of its name, the rows its definition spans and the name's source line."""

    name: str
    category: str
    line: int
    first: int
    last: int
    text: str


@dataclass(frozen=True)
class FileTags:
    """What one file defines and the identifiers it uses (with repeats, in order)."""

    path: str
    definitions: tuple[Definition, ...]
    references: tuple[str, ...]


def file_tags(path: str, source: bytes, grammar: Grammar) -> FileTags:
    """Parse ``source`` and collect its definitions (the grammar's tags query) and its
    references: the query's ``@reference.*`` names (calls, ``obj.method()`` included) and
    the plain identifiers that are not a defined name, an attribute read (``obj.text``
    names no particular ``text``) or an import's module path."""
    import tree_sitter

    root = tree_sitter.Parser(grammar.language).parse(source).root_node
    lines = source.decode("utf-8", errors="replace").split("\n")
    found: dict[tuple[str, int, int], Definition] = {}
    name_spans: set[tuple[int, int]] = set()
    used: dict[tuple[int, int], str] = {}
    for _pattern, captures in tree_sitter.QueryCursor(grammar.tags).matches(root):
        kind = next((k for k in captures if k.startswith(("definition.", "reference."))), None)
        if kind is None or not captures.get("name"):
            continue
        if kind.startswith("reference."):
            used.update({(n.start_byte, n.end_byte): _text(n) for n in captures["name"]})
            continue
        name_node, node = captures["name"][0], captures[kind][0]
        row = name_node.start_point.row
        key = (_text(name_node), row, name_node.start_point.column)
        name_spans.add((name_node.start_byte, name_node.end_byte))
        found.setdefault(
            key,
            Definition(
                name=key[0],
                category=kind.removeprefix("definition."),
                line=row,
                first=node.start_point.row,
                last=node.end_point.row,
                text=lines[row].rstrip()[:LINE_CHARS] if row < len(lines) else "",
            ),
        )
    for node in tree_sitter.QueryCursor(grammar.references).captures(root).get("name", ()):
        span = (node.start_byte, node.end_byte)
        if span not in name_spans and not _is_not_a_use(node) and not _in_module_path(node):
            used[span] = _text(node)
    references = tuple(name for _span, name in sorted(used.items()))
    definitions = sorted(found.values(), key=lambda d: (d.line, d.name))
    return FileTags(path, tuple(definitions), references)


def _is_not_a_use(node: Any) -> bool:
    """Whether an identifier binds a local name or reads an attribute (see ``_NOT_USES``)."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type in _PARAMETER_LISTS:
        return True
    fields = _NOT_USES.get(parent.type, ())
    return any(parent.child_by_field_name(field) == node for field in fields)


def _in_module_path(node: Any) -> bool:
    """Whether an identifier is part of a module path in an import statement."""
    child, parent = node, node.parent
    while parent is not None and parent.type in _MODULE_PATH_PARTS:
        child, parent = parent, parent.parent
    if child is node or parent is None:
        return False
    if parent.type == "import_statement":
        return True
    module = parent.child_by_field_name("module_name")
    return parent.type == "import_from_statement" and module is not None and module == child


def _text(node: object) -> str:
    return node.text.decode("utf-8", errors="replace")  # type: ignore[attr-defined]
