"""Sessions tab (search, rename, delete, sub-agents nested), ref cards, the question card and
sanitized markdown in headless Chromium; screenshots are saved under the test's tmp folder."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.session.manage import TRASH_DIR
from e2e.test_web_ui import find, find_all, send_message, turn_state, wait
from server.live import TURN_SCRIPT, LiveServer, scripted_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ANSWER = {"content": "An answer long enough to count as one."}
QUESTION = "Which variable should the script print?"


def recorded_session(workspace: Path, message: str, parent: str | None = None) -> str:
    """A session on disk with one answered turn; ``parent`` makes it a sub-agent session."""
    agent = Agent(ScriptedProvider([ANSWER]), workspace, Config())
    agent.run(message)
    agent.close()
    if parent is not None:
        meta = agent.session_dir / "session.json"
        meta.write_text(json.dumps({**json.loads(meta.read_text()), "parent": parent}))
    return agent.session.id


def open_ui(browser: Any, server: LiveServer) -> None:
    browser.get(f"{server.url}/?token={server.token}")
    wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "the UI")


def list_ids(driver: Any, css: str = "#session-list li.session-item") -> list[str]:
    # Read in one script: the list may be redrawn between two WebDriver calls.
    script = "return [...document.querySelectorAll(arguments[0])].map((e) => e.dataset.id)"
    return list(driver.execute_script(script, css))


def tree(driver: Any) -> dict[str, str | None]:
    """Each listed session's id -> the id of the item it is nested in (``None``: top level)."""
    script = """return [...document.querySelectorAll('#session-list li.session-item')].map((e) => {
        const up = e.parentElement.closest('li.session-item');
        return [e.dataset.id, up ? up.dataset.id : null];
    })"""
    return dict(driver.execute_script(script))


def titles(driver: Any) -> dict[str, str]:
    script = """return [...document.querySelectorAll('#session-list li.session-item')]
        .map((e) => [e.dataset.id, e.querySelector('.session-open')?.textContent])"""
    return dict(driver.execute_script(script))


def click(driver: Any, sid: str, css: str) -> None:
    """Click ``css`` in the session's row, found and clicked in one step (the list redraws)."""
    script = "document.querySelector(arguments[0]).click()"
    driver.execute_script(script, f'#session-list li.session-item[data-id="{sid}"] {css}')


def test_sessions_are_searched_renamed_deleted_and_nested(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    garden = recorded_session(workspace, "Plan the garden beds.")
    roses = recorded_session(workspace, "Water the roses.", parent=garden)
    apples = recorded_session(workspace, "Count the apples.")
    with LiveServer(scripted_app(workspace, [ANSWER])) as server:
        open_ui(browser, server)
        labels = {
            o.get_attribute("value"): o.text for o in find_all(browser, "#session-select option")
        }
        assert labels[roses].startswith("-- Water the roses.")
        assert labels[garden].startswith("Plan the garden beds.")

        find(browser, "#tab-sessions").click()
        expected = {garden: None, roses: garden, apples: None}
        wait(browser, lambda d: tree(d) == expected, "roses nested under the garden session")
        assert titles(browser)[roses] == "Water the roses."
        browser.save_screenshot(str(tmp_path / "sessions.png"))

        search = find(browser, "#session-search")
        search.send_keys("ROSES")
        wait(browser, lambda d: list_ids(d) == [roses], "only the matching session")
        browser.save_screenshot(str(tmp_path / "sessions-search.png"))
        search.send_keys(Keys.CONTROL, "a")
        search.send_keys(Keys.BACKSPACE)
        wait(browser, lambda d: len(list_ids(d)) == 3, "the full list again")

        click(browser, apples, ".session-rename")
        title = wait(browser, lambda d: find(d, ".session-title-input"), "the title field")
        title.send_keys(Keys.CONTROL, "a")
        title.send_keys("Orchard count")
        title.send_keys(Keys.ENTER)
        wait(browser, lambda d: titles(d).get(apples) == "Orchard count", "the new title")
        option = find(browser, f'#session-select option[value="{apples}"]')
        assert option.text.startswith("Orchard count")

        click(browser, apples, ".session-delete")
        alert = wait(browser, lambda d: d.switch_to.alert, "the confirm dialog")
        assert apples in alert.text and "trash" in alert.text
        alert.accept()
        wait(browser, lambda d: apples not in list_ids(d), "the deleted session gone")
        assert not find_all(browser, f'#session-select option[value="{apples}"]')
        trashed = list(
            (workspace / ".contextengine" / "sessions" / TRASH_DIR).glob(f"*/*/*/{apples}")
        )
        assert len(trashed) == 1 and (trashed[0] / "session.jsonl").is_file()


def failing_step() -> dict[str, Any]:
    command = "python3 -c 'print(undefined_name)'"
    return {
        "content": "Trying.",
        "tool_calls": [{"name": "shell_exec", "arguments": {"command": command}}],
    }


HAND_OVER = [
    failing_step(),
    failing_step(),
    failing_step(),
    {"content": f"1. a\n2. b\n3. c\n4. d\n5. Yes.\nHUMAN_HELP: yes - {QUESTION}"},
    {"content": "Fixed: the script prints the **name** variable now."},
]


def test_the_question_card_answers_the_running_turn(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with LiveServer(scripted_app(workspace, HAND_OVER)) as server, server.client() as client:
        open_ui(browser, server)
        send_message(browser, "Probe python.")
        card = wait(browser, lambda d: find_all(d, ".msg.agent .question-card"), "the question")[0]
        assert QUESTION in find(card, ".question-text").text
        assert turn_state(browser) == "running"
        browser.save_screenshot(str(tmp_path / "question.png"))

        box = find(card, ".question-input")
        box.send_keys("Print the name variable.")
        box.send_keys(Keys.ENTER)
        wait(browser, lambda d: find_all(d, ".msg.agent .answer"), "the final answer")
        wait(browser, lambda d: turn_state(d) == "idle", "turn end")
        assert find(card, ".question-answer").text == "You answered: Print the name variable."
        assert [e.text for e in find_all(browser, ".answer strong")] == ["name"]
        assert len(find_all(browser, ".msg.user")) == 1, "one turn: the answer continued it"
        sid = find(browser, "#session-select").get_attribute("value")
        entries = client.get(f"/api/sessions/{sid}/history").json()["entries"]
        assert [e["text"] for e in entries if e["kind"] == "user"] == [
            "Probe python.",
            "Print the name variable.",
        ]
        browser.save_screenshot(str(tmp_path / "question-answered.png"))


MARKDOWN = (
    "## Result\n\n- [x] wrote notes.txt\n- [>] checking the output\n- [!] the lint\n\n"
    "| file | lines |\n|---|---|\n| notes.txt | 1 |\n\n"
    "[bad link](javascript:document.title='pwned') and [docs](https://example.org/x)\n\n"
    "<script>document.title='pwned'</script>"
)


def test_refs_are_cards_and_markdown_is_rendered_and_sanitized(
    browser: Any, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = [*TURN_SCRIPT[:-1], {"content": MARKDOWN}]
    with LiveServer(scripted_app(workspace, script)) as server:
        open_ui(browser, server)
        send_message(browser, "Write notes, then print a long line.")
        wait(browser, lambda d: find_all(d, ".msg.agent .answer"), "the final answer")
        wait(browser, lambda d: turn_state(d) == "idle", "turn end")

        answer = find(browser, ".answer")
        assert find(answer, "h2").text == "Result"
        assert [e.text for e in find_all(answer, ".check")] == ["[x]", "[>]", "[!]"]
        assert [e.get_attribute("class") for e in find_all(answer, ".check")] == [
            "check done",
            "check doing",
            "check failed",
        ]
        assert [e.text for e in find_all(answer, "table td")] == ["notes.txt", "1"]
        assert not find_all(answer, "script")
        assert "<script>" in answer.text
        links = find_all(answer, "a")
        assert [a.get_attribute("href") for a in links if a.get_attribute("href")] == [
            "https://example.org/x"
        ]
        assert browser.title == "contextengine"

        shell = find_all(browser, ".msg.agent details.tool")[1]
        assert re.search(r"saved: [\d,]+ chars", find(shell, "summary").text)
        find(shell, "summary").click()
        card = wait(browser, lambda d: find(shell, ".ref-card"), "the ref card")
        assert re.fullmatch(r"[\d,]+ chars", find(card, ".ref-size").text)
        # The live event's preview is cut before the ref's title; the event carries it whole.
        live_title = find(card, ".ref-title").text
        assert "shell_exec" in live_title and "artifacts/" not in live_title
        preview = find(card, ".ref-preview").text
        assert preview.startswith("xxxx") and "\\n" not in preview
        assert not find_all(shell, ".tool-result"), "no raw compressed_ref JSON"
        browser.save_screenshot(str(tmp_path / "ref-card.png"))
        find(card, ".ref-open").click()
        wait(browser, lambda d: "x" * 200 in find(d, "#artifact-view").text, "the artifact")

        # From the history (the whole ref, with its note) the card is the same.
        browser.refresh()
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "reload")
        find(browser, "#tab-chat").click()
        shell = find_all(browser, ".msg.agent details.tool")[1]
        find(shell, "summary").click()
        card = wait(browser, lambda d: find(shell, ".ref-card"), "the ref card again")
        assert "file_read" in find(card, ".ref-note").text
        assert find(card, ".ref-title").text == live_title


def reload(browser: Any) -> None:
    browser.refresh()
    wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "reload")


@contextmanager
def asked(browser: Any, tmp_path: Path) -> Iterator[None]:
    """The UI of a live server whose scripted turn has just asked the human its question."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with LiveServer(scripted_app(workspace, HAND_OVER)) as server:
        open_ui(browser, server)
        send_message(browser, "Probe python.")
        wait(browser, lambda d: find_all(d, ".msg.agent .question-card"), "the question")
        yield


def test_a_reloaded_page_redraws_the_question_card(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    with asked(browser, tmp_path):
        # While the turn waits, a reload redraws the card and the answer still continues it.
        reload(browser)
        cards = wait(browser, lambda d: find_all(d, ".question-card"), "the question again")
        assert len(cards) == 1
        assert QUESTION in find(cards[0], ".question-text").text
        assert turn_state(browser) == "running"
        browser.save_screenshot(str(tmp_path / "question-reloaded.png"))
        box = find(cards[0], ".question-input")
        box.send_keys("Print the name variable.")
        box.send_keys(Keys.ENTER)
        wait(browser, lambda d: find_all(d, ".msg.agent .answer"), "the final answer")
        wait(browser, lambda d: turn_state(d) == "idle", "turn end")
        assert find(cards[0], ".question-answer").text == "You answered: Print the name variable."

        # Once the turn is over, the history draws the card with its answer, in one turn.
        reload(browser)
        card = wait(browser, lambda d: find(d, ".msg.agent .question-card"), "the recorded card")
        assert QUESTION in find(card, ".question-text").text
        assert find(card, ".question-answer").text == "You answered: Print the name variable."
        assert not find_all(card, "form")
        assert [e.text for e in find_all(browser, ".msg.user .text")] == ["Probe python."]
        assert [e.text for e in find_all(browser, ".answer strong")] == ["name"]
        browser.save_screenshot(str(tmp_path / "question-history.png"))


def test_a_question_left_unanswered_is_redrawn_closed(browser: Any, tmp_path: Path) -> None:
    with asked(browser, tmp_path):
        find(browser, "#stop").click()
        wait(browser, lambda d: turn_state(d) == "idle", "turn end")
        assert "waiting for your answer" in find(browser, ".msg.agent .stopped").text

        reload(browser)
        card = wait(browser, lambda d: find(d, ".msg.agent .question-card"), "the recorded card")
        assert QUESTION in find(card, ".question-text").text
        assert find(card, ".question-answer").text.startswith("Not answered: the turn ended.")
        assert not find_all(browser, ".msg.agent .answer"), "the reboot reply is not an answer"
        browser.save_screenshot(str(tmp_path / "question-unanswered.png"))
