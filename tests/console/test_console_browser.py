"""The review console in a real browser: Debian's headless Chromium (/usr/bin/chromium)
driven by Playwright's Python client (which downloads no browser). Screenshots go to
``docs/images/`` when SKILLS_CONSOLE_SCREENSHOTS=1 (how the README's were made), else to
the test's temporary folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import TOKEN

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
#: the flags this machine needs (its closed network refuses Chromium's background calls)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


@pytest.fixture
def browser(tmp_path):
    from missing_parts import skip_or_fail

    if not shutil.which(CHROMIUM):
        skip_or_fail(f"{CHROMIUM} is missing (Debian's chromium; make test installs it)")
    try:
        from playwright import sync_api
    except ImportError:
        skip_or_fail("playwright is missing (the browser extra; make test installs it)")
    profile = tmp_path / "chromium-profile"
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1200, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def screenshot(page, tmp_path: Path, name: str) -> Path:
    """Save a screenshot of ``page``; for the README, as a small 64-colour PNG."""
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=False)
    if os.environ.get("SKILLS_CONSOLE_SCREENSHOTS") == "1":
        from PIL import Image

        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        with Image.open(path) as image:
            image.convert("RGB").quantize(colors=64).save(DOCS_IMAGES / name, optimize=True)
    return path


@pytest.mark.slow
def test_skill_page_renders_its_chart_and_highlighted_code(browser, live_server, skill_name, tmp_path):
    page = browser.new_page()
    page.goto(f"{live_server}/login?token={TOKEN}")
    assert page.url.endswith("/skills")
    page.click(f"text={skill_name}")
    page.wait_for_load_state("load")
    assert page.locator("h1").inner_text().startswith(skill_name)
    chart = page.locator("#chart")
    chart.scroll_into_view_if_needed()
    width = page.evaluate("() => document.querySelector('#chart').naturalWidth")
    assert width == 700  # the PNG loaded (a broken image has naturalWidth 0)
    keyword = page.locator("#code .k").first
    assert keyword.inner_text() == "def"
    color = keyword.evaluate("e => getComputedStyle(e).color")
    assert color != "rgb(0, 0, 0)"  # pygments' stylesheet, served by the app, applied
    shot = screenshot(page, tmp_path, "console-skill.png")
    assert shot.stat().st_size > 10_000


def test_approve_from_the_review_queue_in_the_browser(browser, live_server, library, tmp_path):
    from governed_world import APPROVER, held

    library.actors.add(APPROVER)
    name, version = held(library)
    page = browser.new_page()
    page.goto(f"{live_server}/login?token={TOKEN}")
    page.click("nav >> text=Review queue")
    section = page.locator(f"#review-{name}-{version}")
    assert "Needs a human because" in section.inner_text()
    assert section.locator("tr.critical").count() == 1
    assert section.locator("pre.diff .add").count() >= 1
    screenshot(page, tmp_path, "console-review.png")
    section.locator("form[action$='/approve'] input[name=reason]").fill("checked the diff and the suite")
    section.locator("button.approve").click()
    page.wait_for_load_state("load")
    assert f"approved {name} v{version}: now approved" in page.locator(".notice").inner_text()
    assert page.locator(f"#review-{name}-{version}").count() == 0
    assert page.locator(f"#approved-{name}-{version}").count() == 1
    assert library.get(name, version).status == "approved"
    event = library.audit(name)[-1]
    assert (event.version, event.from_status, event.to_status) == (version, "evaluated", "approved")
    assert (event.actor, event.reason) == (APPROVER.id, "checked the diff and the suite")
