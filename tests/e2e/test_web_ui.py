"""The web UI in headless Chromium against a live server running a scripted session."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from contextengine import Config
from contextengine.context.request import Request
from server.live import TURN_SCRIPT, Gate, LiveServer, parse_sse, scripted_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WAIT_S = 20
MESSAGE = "Write notes.txt, then print a long line."
# The final answer carries markdown and raw HTML: the HTML must show as text.
SCRIPT = [
    *TURN_SCRIPT[:-1],
    {
        "content": "Done: **notes.txt** holds `hello`.\n\n<img src=x onerror=\"document.title='pwned'\">"
    },
]


def wait(driver: Any, condition: Any, what: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S).until(condition, message=f"waiting for {what}")


def find(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def find_all(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def plain(markdown_line: str) -> str:
    """A markdown line's text as rendered (markers and emphasis removed)."""
    text = re.sub(r"^\s*(#+|[-*+]|\d+[.)])\s+", "", markdown_line)
    text = re.sub(r"^\[[ xX]\]\s*", "", text)
    return text.replace("**", "").replace("`", "").strip()


def session_folder(workspace: Path, sid: str) -> Path:
    return next((workspace / ".contextengine" / "sessions").glob(f"*/*/*/{sid}"))


def test_chat_memory_and_artifacts_in_the_browser(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with LiveServer(scripted_app(workspace, SCRIPT)) as server:
        browser.get(f"{server.url}/?token={server.token}")
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "the UI")

        # Session picker: a new session becomes the selected one.
        find(browser, "#new-session").click()
        wait(browser, lambda d: find(d, "#session-select").get_attribute("value"), "a session")
        sid = find(browser, "#session-select").get_attribute("value")

        # Chat: send, then see tool calls, usage and the streamed final answer.
        box = find(browser, "#message")
        box.send_keys(MESSAGE)
        box.send_keys(Keys.ENTER)
        wait(browser, lambda d: find_all(d, ".msg.agent .answer"), "the final answer")
        wait(browser, lambda d: find(d, "body").get_attribute("data-turn") == "idle", "turn end")

        assert find(browser, ".msg.user .text").text == MESSAGE
        answer = find(browser, ".msg.agent .answer")
        assert [e.text for e in find_all(browser, ".answer strong")] == ["notes.txt"]
        assert [e.text for e in find_all(browser, ".answer code")] == ["hello"]
        assert not find_all(browser, ".answer img")
        assert "<img src=x" in answer.text
        assert browser.title == "contextengine"
        # The final step's text is shown once, as the answer, not also as a thought.
        steps = [e.text for e in find_all(browser, ".step-text")]
        assert steps == [TURN_SCRIPT[0]["content"], TURN_SCRIPT[1]["content"]]

        tools = find_all(browser, ".msg.agent details.tool")
        assert [find(t, ".tool-name").text for t in tools] == ["file_write", "shell_exec"]
        assert [find(t, ".badge").text for t in tools] == ["success", "success"]
        assert tools[0].get_attribute("open") is None
        find(tools[0], "summary").click()
        wait(browser, lambda d: tools[0].get_attribute("open") is not None, "an open tool call")
        assert '"path": "notes.txt"' in find(tools[0], ".tool-arguments").text
        assert "Created notes.txt" in find(tools[0], ".tool-result").text

        usage_lines = [e.text for e in find_all(browser, ".msg.agent .usage")]
        assert len(usage_lines) == 3
        assert all(re.search(r"main · [\d,]+ in · [\d,]+ cached \(\d+%\)", u) for u in usage_lines)
        wait(browser, lambda d: "3 calls" in find(d, "#usage-summary").text, "usage summary")
        browser.save_screenshot(str(tmp_path / "chat.png"))

        # Working memory: each file the turn wrote was announced live in the chat, and the
        # tab shows it has news.
        memory = httpx.get(f"{server.url}/api/sessions/{sid}/memory", headers=server.auth).json()[
            "files"
        ]
        written = {f["name"] for f in memory if f["content"] is not None}
        chips = {e.get_attribute("data-file") for e in find_all(browser, ".memory-note")}
        assert chips <= written
        assert bool(chips) == bool(written)
        assert find(browser, "#tab-memory .dot").is_displayed() == bool(written)
        # The Task Plan tab shows task_plan.md as the API serves it (written by the test
        # when the agent keeps no plan file).
        plan = next(f["content"] for f in memory if f["name"] == "task_plan.md")
        if plan is None:
            plan = "# Task Plan\n\n## Goal\nWrite **notes.txt**\n\n- [x] write it\n- [ ] check it\n"
            (session_folder(workspace, sid) / "task_plan.md").write_text(plan, encoding="utf-8")
        find(browser, "#tab-memory").click()
        wait(browser, lambda d: find(d, "#panel-memory").is_displayed(), "the memory tab")
        first_line = plain(next(line for line in plan.splitlines() if line.strip()))
        wait(
            browser,
            lambda d: first_line in find(d, "#memory-content").text,
            f"task_plan.md's first line {first_line!r}",
        )
        assert find(browser, "#mem-task_plan").get_attribute("aria-selected") == "true"
        browser.save_screenshot(str(tmp_path / "memory.png"))
        find(browser, "#mem-progress").click()
        wait(
            browser,
            lambda d: find(d, "#memory-content").get_attribute("data-file") == "progress.md",
            "the progress sub-tab",
        )

        # Artifacts: one card per file (name, size, first lines, Open); the shell command's
        # long output opens from its card.
        find(browser, "#tab-artifacts").click()
        cards = "#artifact-list .artifact-card"
        wait(browser, lambda d: find_all(d, cards), "the artifact cards")
        card = next(e for e in find_all(browser, cards) if "shell_exec" in e.text)
        assert "shell_exec" in find(card, ".ref-title").text
        assert find(card, ".ref-kind").text.lower() == "text"
        assert re.fullmatch(r"[\d.]+ KB", find(card, ".ref-size").text)
        assert find(card, ".ref-preview").text.startswith("xxxx")
        find(card, ".ref-open").click()
        wait(browser, lambda d: "x" * 200 in find(d, "#artifact-view").text, "the artifact text")
        assert "shell_exec" in find(browser, "#artifact-title").text
        assert "shell_exec" in find(browser, f"{cards}.selected .ref-title").text
        browser.save_screenshot(str(tmp_path / "artifacts.png"))

        # The same artifact opens from the tool result that points to it.
        find(browser, "#tab-chat").click()
        find(tools[1], "summary").click()
        wait(browser, lambda d: find(tools[1], "button.link").is_displayed(), "the artifact link")
        browser.execute_script("document.querySelector('#artifact-view').textContent = ''")
        find(tools[1], "button.link").click()
        wait(browser, lambda d: find(d, "#panel-artifacts").is_displayed(), "the artifacts tab")
        wait(browser, lambda d: "x" * 200 in find(d, "#artifact-view").text, "the linked artifact")

        # A reload reopens the session from the URL and redraws its history.
        browser.refresh()
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "reload")
        find(browser, "#tab-chat").click()
        assert find(browser, "#session-select").get_attribute("value") == sid
        assert find(browser, ".msg.user .text").text == MESSAGE
        assert len(find_all(browser, ".msg.agent details.tool")) == 2
        assert [e.text for e in find_all(browser, ".answer strong")] == ["notes.txt"]
        assert not find_all(browser, ".answer img")
        browser.save_screenshot(str(tmp_path / "history.png"))


def test_compaction_progress_and_archived_history_in_the_browser(
    browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.keys import Keys

    def model(request: Request) -> dict[str, Any]:
        if request.purpose != "main":
            return {"content": "Summary: the user asked numbered questions; each was answered."}
        return {"content": "An answer long enough to count as one."}

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # tight, yet with room for the summary request (the tools take about 1k tokens)
    tight = Config(context_window=6000, keep_rounds=1)
    with LiveServer(scripted_app(workspace, model, tight)) as server:
        browser.get(f"{server.url}/?token={server.token}")
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "the UI")
        for n in range(4):
            box = find(browser, "#message")
            box.send_keys(f"Question {n}: " + "padding " * 400)
            box.send_keys(Keys.ENTER)
            wait(browser, lambda d, n=n: len(find_all(d, ".answer")) == n + 1, f"answer {n}")
            wait(browser, lambda d: find(d, "body").get_attribute("data-turn") == "idle", "idle")
        lines = [e.text for e in find_all(browser, ".msg.agent .compaction")]
        assert any(line.startswith("compaction done: Archived") for line in lines), lines
        assert not find_all(browser, ".compaction.running")
        browser.save_screenshot(str(tmp_path / "compaction.png"))

        sid = find(browser, "#session-select").get_attribute("value")
        entries = httpx.get(f"{server.url}/api/sessions/{sid}/history", headers=server.auth).json()[
            "entries"
        ]
        summaries = [e for e in entries if e["kind"] == "summary"]
        assert summaries
        browser.refresh()
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "reload")
        archived = find_all(browser, "details.compaction")
        assert len(archived) == len(summaries)
        assert summaries[0]["archive"] in find(archived[0], "summary").text


def send_message(driver: Any, text: str) -> None:
    from selenium.webdriver.common.keys import Keys

    box = find(driver, "#message")
    box.send_keys(text)
    box.send_keys(Keys.ENTER)


def turn_state(driver: Any) -> str:
    return find(driver, "body").get_attribute("data-turn")


def test_a_reload_mid_turn_re_attaches_and_loses_no_event(browser: Any, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    gate = Gate(SCRIPT)
    with LiveServer(scripted_app(workspace, gate)) as server:
        browser.get(f"{server.url}/?token={server.token}")
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "the UI")
        find(browser, "#new-session").click()
        wait(browser, lambda d: find(d, "#session-select").get_attribute("value"), "a session")
        sid = find(browser, "#session-select").get_attribute("value")
        send_message(browser, MESSAGE)
        gate.answer()
        wait(browser, lambda d: find_all(d, ".msg.agent .badge.success"), "the first tool result")

        # Reload while the model is busy with the second step.
        browser.refresh()
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "reload")
        wait(browser, lambda d: turn_state(d) == "running", "the re-attached running turn")
        wait(browser, lambda d: find_all(d, ".msg.agent .badge.success"), "the replayed tool call")
        assert find(browser, "#stop").is_displayed()
        assert [e.text for e in find_all(browser, ".msg.user .text")] == [MESSAGE]
        browser.save_screenshot(str(tmp_path / "reattached.png"))

        gate.answer()
        gate.answer()
        wait(browser, lambda d: find_all(d, ".msg.agent .answer"), "the final answer")
        wait(browser, lambda d: turn_state(d) == "idle", "turn end")
        assert not find(browser, "#stop").is_displayed()

        # Every event of the turn is drawn once: as many tool blocks, results and usage
        # lines as the session's event record holds.
        with (
            server.client() as client,
            client.stream("GET", f"/api/sessions/{sid}/events") as response,
        ):
            events = [e.event for e in parse_sse(response.iter_lines())]
        tools = find_all(browser, ".msg.agent details.tool")
        assert [find(t, ".tool-name").text for t in tools] == ["file_write", "shell_exec"]
        assert [find(t, ".badge").text for t in tools] == ["success", "success"]
        assert len(tools) == events.count("tool_call") == events.count("tool_result")
        assert len(find_all(browser, ".msg.agent .usage")) == events.count("usage") == 3
        assert [e.text for e in find_all(browser, ".answer strong")] == ["notes.txt"]
        steps = [e.text for e in find_all(browser, ".step-text")]
        assert steps == [TURN_SCRIPT[0]["content"], TURN_SCRIPT[1]["content"]]
        assert [e.text for e in find_all(browser, ".msg.user .text")] == [MESSAGE]
        browser.save_screenshot(str(tmp_path / "reattached-done.png"))


def test_stop_ends_a_turn_and_the_session_goes_on(browser: Any, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    gate = Gate([SCRIPT[0], {"content": "The answer to the message after the stop."}])
    with LiveServer(scripted_app(workspace, gate)) as server:
        browser.get(f"{server.url}/?token={server.token}")
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "the UI")
        send_message(browser, "Write the notes, please.")
        wait(browser, lambda d: find(d, "#stop").is_displayed(), "the Stop button")
        assert gate.asked.acquire(timeout=WAIT_S)
        find(browser, "#stop").click()
        wait(browser, lambda d: find(d, "#stop").text == "Stopping…", "the accepted stop")
        gate.allowed.release()  # the step in flight ends; no further step starts
        wait(browser, lambda d: turn_state(d) == "idle", "the stopped turn")
        assert find(browser, ".msg.agent .stopped").text == "Stopped after 1 step(s)."
        assert not find_all(browser, ".msg.agent .answer")
        assert len(find_all(browser, ".msg.agent details.tool")) == 1
        browser.save_screenshot(str(tmp_path / "stopped.png"))

        send_message(browser, "Now just answer.")
        gate.answer()
        wait(browser, lambda d: find_all(d, ".msg.agent .answer"), "the next answer")
        wait(browser, lambda d: turn_state(d) == "idle", "the next turn's end")
        answer = find(browser, ".msg.agent .answer").text
        assert answer == "The answer to the message after the stop."


def test_the_page_without_the_token_says_how_to_get_in(browser: Any, tmp_path: Path) -> None:
    with LiveServer(scripted_app(tmp_path)) as server:
        browser.get(server.url)
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "the UI")
        assert "missing or wrong API token" in find(browser, "#chat-log .empty").text
        browser.get(f"{server.url}/?token={server.token}")
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "the UI")
        assert browser.current_url == f"{server.url}/"
        assert "token" not in find(browser, "#chat-log").text
