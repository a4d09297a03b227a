"""Helpers for the measurement tests: sample paths, the CLI, synthetic trajectories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "trajectories"
NATIVE_SAMPLE = EXAMPLES / "oh_llama4maverick_ponylang__ponyc-4595.json"
TEXT_SAMPLE = EXAMPLES / "msa1_gemini3pro_sympy__sympy-19637.json"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the real ``contextengine`` command line in a child process."""
    return subprocess.run(
        [sys.executable, "-c", "from contextengine.cli import main; main()", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=240,
    )


def write_json(path: Path, value: Any) -> Path:
    """Write ``value`` as JSON to ``path``."""
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


@pytest.fixture
def multi_round() -> dict[str, Any]:
    """A small native-protocol run with two rounds, parallel calls, an error and reasoning."""
    listing = "\n".join(f"src/module_{i}.py" for i in range(40))
    source = "\n".join(f"def helper_{i}(value):\n    return value * {i}" for i in range(60))
    return {
        "source": "synthetic",
        "license": "CC0",
        "model": "test-model",
        "task": "Fix the bug in the helpers.",
        "system": "You are a coding agent.",
        "tools": [
            {
                "name": "bash",
                "description": "Run a command.",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            }
        ],
        "steps": [
            {
                "assistant": "Listing the sources.",
                "tool_calls": [{"id": "a", "name": "bash", "arguments": {"command": "ls src"}}],
                "observation": listing,
                "is_error": False,
                "meta_note": "unknown keys are ignored",
            },
            {
                "assistant": "Reading src/module_7.py and checking git.",
                "reasoning": "module_7 looks relevant",
                "tool_calls": [
                    {"id": "b", "name": "bash", "arguments": {"command": "cat src/module_7.py"}},
                    {"id": "c", "name": "bash", "arguments": {"command": "git status"}},
                ],
                "observation": source,
            },
            {
                "assistant": "Running the tests for helper_42.",
                "tool_calls": [{"id": "d", "name": "bash", "arguments": {"command": "pytest"}}],
                "observation": "Traceback (most recent call last):\nValueError: helper_42 broke",
                "is_error": True,
            },
            {"assistant": "helper_42 multiplies by the wrong factor; fixed it.", "observation": ""},
            {
                "user": "Please also check helper_7.",
                "assistant": "Checking helper_7.",
                "tool_calls": [
                    {"id": "e", "name": "bash", "arguments": {"command": "grep -n helper_7 src"}}
                ],
                "observation": "src/module_7.py:15:def helper_7(value):",
            },
            {"assistant": "helper_7 is fine: it returns value * 7.", "observation": None},
        ],
    }


@pytest.fixture
def text_protocol() -> dict[str, Any]:
    """A text-protocol run: no tools declared, no tool_calls, actions in the text."""
    return {
        "task": "Find the version.",
        "system": "Reply with THOUGHT and one bash block.",
        "tools": [],
        "steps": [
            {
                "assistant": "THOUGHT: look around\n\n```bash\nls -la\n```",
                "observation": "setup.py\nversion_info.txt",
            },
            {
                "assistant": 'Thought: read it\nAction: read_file[{"path": "version_info.txt"}]',
                "observation": "version = 4.2.1",
            },
            {"assistant": "I had a thought without an action.", "observation": "Format error."},
            {"assistant": "The version is 4.2.1 (version_info.txt).", "observation": ""},
        ],
    }
