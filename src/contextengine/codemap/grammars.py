"""The languages the code map parses: file suffix -> tree-sitter grammar and queries.

Grammars come from the tree-sitter project's own per-language wheels (the optional extra
``codemap``: ``tree-sitter``, ``tree-sitter-python``, ``tree-sitter-javascript``,
``tree-sitter-typescript``). Each wheel ships the grammar's ``tags.scm``, whose
``@definition.*`` captures name what a file defines. TypeScript's query only adds to
JavaScript's (its grammar extends JavaScript's), so both are joined for it.

References are the queries' ``@reference.*`` captures (calls) and every identifier leaf of
the kinds listed per language: a name used as a base class, a type or an import ties files
together as much as a call does. Property names are left to the queries, which count them
where they are called (``obj.method()``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

from contextengine.errors import ContextEngineError

INSTALL_HINT = "pip install 'contextengine[codemap]'"


class CodeMapUnavailable(ContextEngineError):
    """The tree-sitter packages the code map needs are not installed."""


@dataclass(frozen=True)
class GrammarSpec:
    """Where a language's grammar lives and which identifier kinds are references."""

    module: str
    language_function: str
    tags_from: tuple[str, ...]
    identifiers: tuple[str, ...]


_JS_IDENTIFIERS = ("identifier", "shorthand_property_identifier")

GRAMMARS: dict[str, GrammarSpec] = {
    "python": GrammarSpec(
        "tree_sitter_python", "language", ("tree_sitter_python",), ("identifier",)
    ),
    "javascript": GrammarSpec(
        "tree_sitter_javascript", "language", ("tree_sitter_javascript",), _JS_IDENTIFIERS
    ),
    "typescript": GrammarSpec(
        "tree_sitter_typescript",
        "language_typescript",
        ("tree_sitter_javascript", "tree_sitter_typescript"),
        (*_JS_IDENTIFIERS, "type_identifier"),
    ),
    "tsx": GrammarSpec(
        "tree_sitter_typescript",
        "language_tsx",
        ("tree_sitter_javascript", "tree_sitter_typescript"),
        (*_JS_IDENTIFIERS, "type_identifier"),
    ),
}
"""Language name -> grammar."""

SUFFIXES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
}
"""File suffix -> language name."""


@dataclass(frozen=True)
class Grammar:
    """A loaded language: its parser language, tags query and reference query."""

    name: str
    language: Any
    tags: Any
    references: Any


def language_of(path: str) -> str | None:
    """The language of a file by its suffix, or ``None`` when the map does not parse it."""
    dot = path.rfind(".")
    return SUFFIXES.get(path[dot:].lower()) if dot > path.rfind("/") else None


@cache
def grammar(name: str) -> Grammar:
    """The loaded grammar of language ``name``; ``CodeMapUnavailable`` without the extra."""
    spec = GRAMMARS[name]
    try:
        import tree_sitter

        module = importlib.import_module(spec.module)
        tags_source = "\n".join(importlib.import_module(m).TAGS_QUERY for m in spec.tags_from)
    except ImportError as exc:
        raise CodeMapUnavailable(
            f"the code map needs tree-sitter grammars ({exc.name} is missing): {INSTALL_HINT}"
        ) from None
    language = tree_sitter.Language(getattr(module, spec.language_function)())
    references = "[" + " ".join(f"({kind})" for kind in spec.identifiers) + "] @name"
    return Grammar(
        name,
        language,
        tree_sitter.Query(language, tags_source),
        tree_sitter.Query(language, references),
    )
