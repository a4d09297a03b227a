"""The scripted model: 25 tool steps and a final answer, said in each framework's tool names.

A step is semantic (``todo``, ``ls``, ``read``, ``write``, ``edit``, ``shell``); a dialect
turns it into the tool call a framework's own tools accept, so every framework does the
same work: read the spec, write a module whose first run fails, fix it, write tests that
fail, fix the code until they pass, write and check a README.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MODULE_V1 = '''"""Word frequencies of a text file."""

import sys


def top_words(text, n):
    """The n most common words of text as (word, count), ties alphabetical."""
    words = text.lower().split()
    counts = Counter(words)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def main(argv):
    n = int(argv[argv.index("--top") + 1]) if "--top" in argv else 10
    with open(argv[1], encoding="utf-8") as f:
        for word, count in top_words(f.read(), n):
            print(word, count)


if __name__ == "__main__":
    main(sys.argv)
'''
TESTS = """import unittest

from wordfreq import top_words


class TopWordsTest(unittest.TestCase):
    def test_counts_and_order(self):
        self.assertEqual(top_words("b a b c a b", 2), [("b", 3), ("a", 2)])

    def test_case_and_punctuation(self):
        self.assertEqual(top_words("Hello, hello! HELLO.", 1), [("hello", 3)])

    def test_ties_alphabetical(self):
        self.assertEqual(top_words("z y x", 3), [("x", 1), ("y", 1), ("z", 1)])


if __name__ == "__main__":
    unittest.main()
"""
README = """# wordfreq

Prints the most common words of a text file, lower-cased and without punctuation.

    python3 wordfreq.py FILE [--top N]

Run the tests with `python3 -m unittest`.
"""
FINAL_ANSWER = (
    "Done. wordfreq.py has top_words (lower-cased, punctuation stripped, ties alphabetical) "
    "and a command line; test_wordfreq.py has three unittest tests, all passing; README.md "
    "shows the usage. On the way I fixed a missing Counter import and the punctuation handling."
)
SIDE_REPLY = (
    "## Summary\n- Task: build wordfreq.py, test_wordfreq.py and README.md from notes.md.\n"
    "- Done so far: the files written and run as listed in the history; fixes to wordfreq.py "
    "(Counter import, punctuation) where the runs failed.\n- Next: continue with the todo list."
)
"""The answer to a side call (a compaction summary or any request that forbids tools)."""


def _todos(*statuses: str) -> list[dict[str, str]]:
    names = ("Read the spec", "Write wordfreq.py", "Write and pass the tests", "Write README.md")
    return [{"content": c, "status": s} for c, s in zip(names, statuses, strict=True)]


@dataclass(frozen=True)
class Step:
    """One scripted model turn: a short thought and one semantic tool call (``fails``:
    the call is meant to fail, a run or a test run that shows an error)."""

    thought: str
    action: str
    args: dict[str, Any]
    fails: bool = False


STEPS: tuple[Step, ...] = (
    Step(
        "Planning the work.",
        "todo",
        {"todos": _todos("in_progress", "pending", "pending", "pending")},
    ),
    Step("Looking at the folder.", "ls", {"path": "."}),
    Step("Reading the spec.", "read", {"path": "notes.md"}),
    Step("Spec read.", "todo", {"todos": _todos("done", "in_progress", "pending", "pending")}),
    Step("Writing the module.", "write", {"path": "wordfreq.py", "content": MODULE_V1}),
    Step(
        "Trying it on the notes.",
        "shell",
        {"command": "python3 wordfreq.py notes.md --top 5"},
        fails=True,
    ),
    Step("It failed; reading the module.", "read", {"path": "wordfreq.py"}),
    Step(
        "Counter is not imported.",
        "edit",
        {
            "path": "wordfreq.py",
            "old_text": "import sys\n",
            "new_text": "import sys\nfrom collections import Counter\n",
        },
    ),
    Step("Running it again.", "shell", {"command": "python3 wordfreq.py notes.md --top 5"}),
    Step("Module works.", "todo", {"todos": _todos("done", "done", "in_progress", "pending")}),
    Step("Writing the tests.", "write", {"path": "test_wordfreq.py", "content": TESTS}),
    Step(
        "Running the tests.",
        "shell",
        {"command": "python3 -m unittest -q test_wordfreq"},
        fails=True,
    ),
    Step(
        "Punctuation is kept; splitting on words instead.",
        "edit",
        {
            "path": "wordfreq.py",
            "old_text": "    words = text.lower().split()\n",
            "new_text": '    words = re.findall(r"[a-z0-9\']+", text.lower())\n',
        },
    ),
    Step(
        "Importing re.",
        "edit",
        {"path": "wordfreq.py", "old_text": "import sys\n", "new_text": "import re\nimport sys\n"},
    ),
    Step("Running the tests again.", "shell", {"command": "python3 -m unittest -q test_wordfreq"}),
    Step("Checking the final module.", "read", {"path": "wordfreq.py"}),
    Step("Tests pass.", "todo", {"todos": _todos("done", "done", "done", "in_progress")}),
    Step("Writing the README.", "write", {"path": "README.md", "content": README}),
    Step("Trying the usage line.", "shell", {"command": "python3 wordfreq.py README.md --top 3"}),
    Step(
        "Adding an example.",
        "edit",
        {
            "path": "README.md",
            "old_text": "Run the tests",
            "new_text": "Example: `python3 wordfreq.py README.md --top 3`.\n\nRun the tests",
        },
    ),
    Step("Checking the README.", "read", {"path": "README.md"}),
    Step("Looking at the folder.", "ls", {"path": "."}),
    Step("Running every test.", "shell", {"command": "python3 -m unittest -q"}),
    Step("Counting lines.", "shell", {"command": "wc -l wordfreq.py test_wordfreq.py README.md"}),
    Step("All done.", "todo", {"todos": _todos("done", "done", "done", "done")}),
)

ToolCallSpec = tuple[str, dict[str, Any]]
Dialect = Callable[[Step], ToolCallSpec]

_BASELINE_NAMES = {
    "todo": "todo",
    "ls": "ls",
    "read": "read_file",
    "write": "write_file",
    "edit": "edit_file",
    "shell": "run_shell",
}


def baseline(step: Step) -> ToolCallSpec:
    """The six shared tools of ``task.py`` (plain chat, the peers, contextengine's peer tools)."""
    return _BASELINE_NAMES[step.action], step.args


_CONTEXTENGINE_NAMES = {
    "todo": "todo_write",
    "ls": "file_ls",
    "read": "file_read",
    "write": "file_write",
    "edit": "file_edit",
    "shell": "shell_exec",
}


def contextengine(step: Step) -> ToolCallSpec:
    """contextengine's default tools."""
    return _CONTEXTENGINE_NAMES[step.action], step.args


def deepagents(step: Step) -> ToolCallSpec:
    """deepagents' built-in tools (absolute virtual paths, ``completed`` todos)."""
    args = step.args
    if step.action == "todo":
        todos = [
            {**t, "status": "completed" if t["status"] == "done" else t["status"]}
            for t in args["todos"]
        ]
        return "write_todos", {"todos": todos}
    if step.action == "shell":
        return "execute", args
    path = "/" if args["path"] == "." else "/" + args["path"]
    if step.action == "ls":
        return "ls", {"path": path}
    if step.action == "read":
        return "read_file", {"file_path": path}
    if step.action == "write":
        return "write_file", {"file_path": path, "content": args["content"]}
    return "edit_file", {
        "file_path": path,
        "old_string": args["old_text"],
        "new_string": args["new_text"],
    }


@dataclass(frozen=True)
class Voice:
    """How one framework's model speaks: its tool names, and whether it answers by tool."""

    dialect: Dialect
    answer_tool: str | None = None


VOICES: dict[str, Voice] = {
    "baseline": Voice(baseline),
    "contextengine": Voice(contextengine),
    "deepagents": Voice(deepagents),
    "smolagents": Voice(baseline, answer_tool="final_answer"),
}


@dataclass(frozen=True)
class Reply:
    """One scripted assistant message: text and at most one tool call."""

    content: str
    tool_name: str | None = None
    arguments: dict[str, Any] | None = None
    call_id: str | None = None


def reply_for(voice: Voice, index: int) -> Reply | None:
    """The model's ``index``-th main reply (0-based); ``None`` past the final answer."""
    if index < len(STEPS):
        step = STEPS[index]
        name, args = voice.dialect(step)
        return Reply(step.thought, name, args, f"call_{index:02d}")
    if index == len(STEPS):
        if voice.answer_tool is not None:
            return Reply("", voice.answer_tool, {"answer": FINAL_ANSWER}, f"call_{index:02d}")
        return Reply(FINAL_ANSWER)
    return None
