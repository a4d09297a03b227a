"""The Inspector and Timeline views in headless Chromium, on a session with a compaction
and a CODE_LAW.md edit; screenshots are saved under the test's tmp folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e.test_web_ui import find, find_all, wait
from server.live import LiveServer, scripted_app
from support.inspected_session import record_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_inspector_shows_request_parts_and_the_timeline_draws(browser: Any, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    session_dir, sent = record_session(workspace)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with LiveServer(scripted_app(workspace)) as server, server.client() as client:
        calls = client.get(f"/api/sessions/{session_dir.name}/inspect").json()["calls"]
        broken = next(c for c in calls if c["break"] and c["break"]["cause"] == "l2_changed")
        browser.get(f"{server.url}/?token={server.token}")
        browser.get(f"{server.url}/#session={session_dir.name}")
        wait(browser, lambda d: find(d, "body").get_attribute("data-ready") == "true", "the UI")
        find(browser, "#tab-inspector").click()
        rows = wait(browser, lambda d: find_all(d, "#inspector-calls tr[data-call]"), "calls")
        assert len(rows) == len(sent)
        assert "l2_changed" in rows[broken["call"] - 1].text
        rows[broken["call"] - 1].click()
        wait(
            browser,
            lambda d: "Cache break: l2_changed" in find(d, "#inspector-detail").text,
            "the selected call",
        )
        drawn = {
            p.get_attribute("data-part"): (
                int(p.get_attribute("data-start")),
                int(p.get_attribute("data-end")),
            )
            for p in find_all(browser, "#inspector-detail .part")
        }
        assert drawn == {p["name"]: (p["start"], p["end"]) for p in broken["parts"]}
        predicted = find(browser, ".boundary.mark-predicted")
        assert int(predicted.get_attribute("data-at")) == broken["cached_prefix_predicted"]
        assert "always verify twice" in find(browser, '.part[data-part="l2"]').text
        browser.save_screenshot(str(shots / "inspector.png"))
        browser.execute_script(
            "document.querySelector('.part[data-part=\"system\"]').scrollIntoView()"
        )
        browser.save_screenshot(str(shots / "inspector-parts.png"))
        ref = find(browser, "#inspector-detail .ref-link")
        artifact = ref.text
        ref.click()
        wait(browser, lambda d: artifact in find(d, "#artifact-title").text, "the artifact")
        assert "xxxx" in find(browser, "#artifact-view").text
        find(browser, "#tab-inspector").click()

        find(browser, "#view-timeline").click()
        wait(browser, lambda d: find_all(d, "#timeline rect.bar-cached"), "the chart")
        labels = [t.text for t in find_all(browser, "#timeline .event-label")]
        assert "break: l2_changed" in labels and "compaction" in labels
        totals = find(browser, "#timeline .totals").text
        report = client.get(f"/api/sessions/{session_dir.name}/usage").json()
        assert f"${report['cost_usd']:.4f}" in totals
        browser.save_screenshot(str(shots / "timeline.png"))
    assert (shots / "inspector.png").stat().st_size > 10_000
    assert (shots / "timeline.png").stat().st_size > 10_000
