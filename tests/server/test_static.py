"""The web UI's static files: every script is served locally (vendored, no CDN), the vendored
libraries keep their licence headers, and nothing relies on an emoji font."""

from __future__ import annotations

import re

from contextengine.server.app import STATIC_DIR

VENDOR = STATIC_DIR / "vendor"


def emoji(text: str) -> list[str]:
    """Characters that need an emoji or symbol font (pictographs, dingbats, variation selectors)."""
    return [
        ch
        for ch in text
        if ord(ch) >= 0x1F000
        or 0x2600 <= ord(ch) <= 0x27BF
        or 0x2B00 <= ord(ch) <= 0x2BFF
        or ch == "\ufe0f"
    ]


def test_every_script_and_stylesheet_is_a_local_file() -> None:
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    sources = re.findall(r'<(?:script|link)[^>]* (?:src|href)="([^"]+)"', page)
    assert "/static/vendor/marked.umd.js" in sources
    assert "/static/vendor/purify.min.js" in sources
    for source in sources:
        assert source.startswith("/static/"), f"{source} is not served by the app"
        assert (STATIC_DIR / source.removeprefix("/static/")).is_file()


def test_vendored_libraries_keep_their_licence_headers_and_listed_versions() -> None:
    listing = (VENDOR / "README.md").read_text(encoding="utf-8")
    marked = (VENDOR / "marked.umd.js").read_text(encoding="utf-8")[:400]
    purify = (VENDOR / "purify.min.js").read_text(encoding="utf-8")[:400]
    marked_version = re.search(r"marked v(\d+\.\d+\.\d+)", marked)
    purify_version = re.search(r"@license DOMPurify (\d+\.\d+\.\d+)", purify)
    assert marked_version and "MIT License" in marked
    assert purify_version and "Apache license 2.0 and Mozilla Public License 2.0" in purify
    assert f"marked {marked_version[1]}" in listing
    assert f"dompurify {purify_version[1]}" in listing
    for licence in ("marked.LICENSE", "dompurify.LICENSE", "dompurify.LICENSE-MPL"):
        assert (VENDOR / licence).stat().st_size > 1000


def test_the_ui_needs_no_emoji_font() -> None:
    own = [p for p in STATIC_DIR.iterdir() if p.suffix in {".html", ".js", ".css"}]
    assert {"app.js", "cards.js", "sessions.js", "index.html", "style.css"} <= {p.name for p in own}
    for path in own:
        assert emoji(path.read_text(encoding="utf-8")) == [], path.name
