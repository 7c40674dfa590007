"""Headless Chromium (the Debian package) driven by Playwright, and the on-call walk-through the tests and the
screenshot script share: type `/fabric NODE`, see the picture and buttons, click a degraded link in the
topology, file the draft, read the ticket id.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("FABRICBOT_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1440, "height": 900}
TIMEOUT_MS = 60_000  # a loaded CI machine: the page waits on the bot's lazy listeners

# A point on a link's line, in page coordinates: the path's own geometry through the SVG's screen transform.
POINT_ON = """([gid, t]) => {
  const g = document.querySelector(`#svg-host [id="${gid}"]`);
  const path = g.querySelector("path");
  const p = path.getPointAtLength(path.getTotalLength() * t);
  const m = path.getScreenCTM();
  const x = p.x * m.a + p.y * m.c + m.e, y = p.x * m.b + p.y * m.d + m.f;
  const hit = document.elementFromPoint(x, y);
  return {x, y, inside: !!hit && !!hit.closest(`[id="${gid}"]`)};
}"""


def chromium() -> Path:
    """The browser's path; without it the test skips (locally) or fails (in CI, where it must be installed)."""
    if CHROMIUM.exists():
        return CHROMIUM
    reason = f"headless Chromium not found at {CHROMIUM} (apt-get install chromium chromium-driver)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must install it")
    pytest.skip(reason)


@contextmanager
def page() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium()), args=ARGS, headless=True)
        try:
            tab = browser.new_page(viewport=VIEWPORT)
            tab.set_default_timeout(TIMEOUT_MS)
            yield tab
        finally:
            browser.close()


@dataclass
class Walk:
    """What the walk-through saw."""

    ticket: str = ""
    link: str = ""
    tooltip: str = ""
    shots: list[Path] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


def walk_through(tab: Any, url: str, out: Path, node: str = "hpc-gpu-node-12") -> Walk:
    """The on-call session in the browser; screenshots go to `out`."""
    out.mkdir(parents=True, exist_ok=True)
    walk = Walk()
    tab.on("console", lambda msg: walk.console_errors.append(msg.text) if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: walk.console_errors.append(str(exc)))
    tab.goto(url)
    box = tab.locator("#composer textarea")
    box.fill(f"/fabric {node}")
    box.press("Enter")
    # the summary with its draft buttons in the channel; the picture in its thread
    tab.locator("#messages .bk-btn", has_text="Draft ticket").first.wait_for()
    picture = tab.locator("#thread-messages img.file-image").first
    picture.wait_for()
    tab.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=picture.element_handle())
    tab.mouse.move(1, 1)
    walk.shots.append(_shot(tab, out / "console-channel.png"))

    tab.locator("#thread-messages .open-topology").first.click()
    hot = tab.locator("#svg-host g.hot").first
    hot.wait_for()
    gid = hot.get_attribute("id")
    walk.link = tab.locator(f'.topo-link[data-gid="{gid}"] .comp').inner_text()
    point = tab.evaluate(POINT_ON, [gid, 0.72])
    assert point["inside"], f"the link {gid} is not on top at its own line"
    tab.mouse.move(point["x"], point["y"])
    tab.locator("#tip").wait_for(state="visible")
    walk.tooltip = tab.locator("#tip").inner_text()
    tab.mouse.click(point["x"], point["y"])
    preview = tab.locator("#thread-messages .msg", has=tab.locator(".bk-btn", has_text="File ticket")).last
    preview.wait_for()
    tab.mouse.move(point["x"], point["y"] + 1)  # the hover card again, for the picture
    tab.locator("#tip").wait_for(state="visible")
    walk.shots.append(_shot(tab, out / "console-topology.png"))

    preview.locator(".bk-btn", has_text="File ticket").click()
    filed = tab.locator("#thread-messages .msg", has_text="Filed as").last
    filed.wait_for()
    match = re.search(r"Filed as (\S+?),", filed.inner_text())
    assert match, filed.inner_text()
    walk.ticket = match[1]
    tab.locator("#topo-status", has_text=f"filed as {walk.ticket}").wait_for()  # the topology says so too
    tab.mouse.move(1, 1)
    walk.shots.append(_shot(tab, out / "console-filed.png"))
    return walk


def _shot(tab: Any, path: Path) -> Path:
    tab.screenshot(path=str(path))
    return path
