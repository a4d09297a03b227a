import pytest

from contextengine.toolkit.command_line import ends_in_predicate, simple_commands


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la", [["ls", "-la"]]),
        (
            "cd /src && grep -rn 'a|b' . | head -5",
            [["cd", "/src"], ["grep", "-rn", "a|b", "."], ["head", "-5"]],
        ),
        ('grep "x;y" f; echo done', [["grep", "x;y", "f"], ["echo", "done"]]),
        ("grep -rn x . 2>&1 | wc -l", [["grep", "-rn", "x", ".", "2>1"], ["wc", "-l"]]),
        ("A=1 B=2 /usr/bin/grep x f\n\nfind .", [["grep", "x", "f"], ["find", "."]]),
        ("sleep 1 & ls", [["sleep", "1"], ["ls"]]),
        ("make;;", [["make"]]),
    ],
)
def test_simple_commands_split_at_unquoted_separators(
    command: str, expected: list[list[str]]
) -> None:
    assert simple_commands(command) == expected


@pytest.mark.parametrize("command", ["echo 'unterminated", "X=1", "ls && X=1"])
def test_a_line_that_is_not_shell_words_has_no_simple_commands(command: str) -> None:
    assert simple_commands(command) is None


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("grep -n 'def main' app.py", True),
        ('cd /testbed && grep -r "a\\|b" --include="*.py" src', True),
        ("test -f build/out.bin", True),
        ("[ -d dist ]", True),
        ("diff -q a.txt b.txt", True),
        ("git diff --quiet", True),
        ("rg TODO src", True),
        ("grep -c x f | sort", False),  # the pipeline's status is sort's
        ("grep x f || echo none", False),
        ("false", False),
        ("exit 1", False),
        ("python3 check.py", False),
        ("git commit -m wip", False),
        ("echo 'unterminated", False),
    ],
)
def test_a_line_ending_in_a_search_or_comparison_is_a_predicate(
    command: str, expected: bool
) -> None:
    assert ends_in_predicate(command) is expected
