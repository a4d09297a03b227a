"""``web_fetch`` (R14.1): a web page as clean text.

The main content is extracted with trafilatura (the optional extra ``web``), as markdown
without navigation, footers or comments. The outcome is of kind ``webpage``: over 2,000
characters the observation processor saves it to the artifacts and the context keeps a
``compressed_ref`` with both the page's URL and the saved copy's path (R3.2, R3.3).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.context import ToolContext
from contextengine.tools.web_http import WebRefused, check_url, get

TEXT_TYPES = ("text/plain", "text/markdown")
HTML_TYPES = ("text/html", "application/xhtml+xml")


class WebFetch:
    """``web_fetch``: GET a page (robots.txt honoured) and return its main text."""

    name: ClassVar[str] = "web_fetch"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="web", compressor="other")
    description: ClassVar[str] = "A web page's main content as markdown."

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")

        url: str

    def run(self, args: WebFetch.Args, ctx: ToolContext) -> ToolOutcome:
        """Fetch ``args.url`` under the session's web policy."""
        policy = ctx.web
        try:
            check_url(args.url, policy)  # before robots.txt: no request to a refused host
            if policy.respect_robots and not ctx.robots.allows(args.url, policy):
                return ToolOutcome.fail(
                    "robots_disallowed",
                    f"robots.txt of this site disallows fetching {args.url} for contextengine",
                )
            page = get(args.url, policy)
        except WebRefused as exc:
            return ToolOutcome.fail(exc.code, str(exc))
        if page.content_type in HTML_TYPES:
            try:
                title, text = _extract(page.body, page.url)
            except ImportError:
                return ToolOutcome.fail(
                    "unavailable", "web_fetch needs trafilatura: pip install 'contextengine[web]'"
                )
        elif page.content_type in TEXT_TYPES:
            title, text = "", page.body.decode(page.charset or "utf-8", errors="replace")
        else:
            return ToolOutcome.fail(
                "not_text", f"{args.url} is {page.content_type}, not an HTML or text page"
            )
        header = [f"Title: {title}"] if title else []
        header.append(f"URL: {page.url}")
        if page.truncated:
            header.append(f"(page cut at {policy.max_bytes} bytes)")
        body = "\n".join(header) + "\n\n" + (text or "(no main text found on this page)")
        data = {
            "url": page.url,
            "title": title,
            "content_type": page.content_type,
            "bytes": len(page.body),
            "truncated": page.truncated,
        }
        return ToolOutcome.ok(body, data, kind="webpage")


def _extract(html: bytes, url: str) -> tuple[str, str]:
    """The page's title and main text as markdown (empty when nothing was found)."""
    import trafilatura  # optional extra "web": imported only when a page is fetched

    text = trafilatura.extract(
        html, url=url, output_format="markdown", include_comments=False, favor_precision=True
    )
    metadata = trafilatura.extract_metadata(html, default_url=url)
    title = (metadata.title or "") if metadata is not None else ""
    return title.strip(), (text or "").strip()
