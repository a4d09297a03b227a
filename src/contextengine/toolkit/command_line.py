"""The simple commands of a shell command line, as far as rules about commands need them."""

from __future__ import annotations

import re
import shlex

_SEPARATOR_CHARS = ";&|\n"
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_REDIRECT_AMPERSAND = re.compile(r"(?<=[<>])&|&(?=>)")  # 2>&1, &>file: not a separator


def simple_commands(command: str) -> list[list[str]] | None:
    """The words of each simple command of ``command`` in order, split at unquoted ``;``,
    ``&``, ``|`` and newlines (leading ``NAME=value`` assignments dropped, the program
    named without its directory); ``None`` when it cannot be split as shell words or a
    part holds nothing but assignments."""
    # Quotes are kept while splitting, so a quoted "|" is a word, not a pipe.
    lexer = shlex.shlex(
        _REDIRECT_AMPERSAND.sub("", command), posix=False, punctuation_chars=_SEPARATOR_CHARS
    )
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    parts: list[list[str]] = [[]]
    try:
        for token in lexer:
            if not token.strip(_SEPARATOR_CHARS):
                parts.append([])
            else:
                parts[-1].extend(shlex.split(token))
    except ValueError:
        return None
    commands: list[list[str]] = []
    for words in filter(None, parts):
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if not words:
            return None
        commands.append([words[0].rsplit("/", 1)[-1], *words[1:]])
    return commands


# programs whose exit status 1 means "no" (no match, false, different), not a failure
_PREDICATES = frozenset(
    {"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "test", "[", "[[", "diff", "cmp"}
)
_PREDICATE_GIT = frozenset({"grep", "diff"})


def ends_in_predicate(command: str) -> bool:
    """Whether the last simple command of ``command`` is a search or comparison, so that
    the line exiting with status 1 and printing nothing is its answer "no" (``grep``
    finding no line, ``test`` being false), not a failure."""
    commands = simple_commands(command)
    if not commands:
        return False
    last = commands[-1]
    if last[0] == "git":
        return len(last) > 1 and last[1] in _PREDICATE_GIT
    return last[0] in _PREDICATES


def answered_no(command: str, exit_code: int, output: str) -> bool:
    """Whether ``command``, exiting with ``exit_code`` after printing ``output`` (its
    streams, wrappers removed), answered "no": a search or comparison exiting 1 in silence.
    Such a call succeeded; its exit status is no error to strike or learn from."""
    return exit_code == 1 and not output.strip() and ends_in_predicate(command)
