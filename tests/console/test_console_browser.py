"""The review console in a real browser: Debian's headless Chromium (/usr/bin/chromium)
driven by Playwright's Python client (which downloads no browser). Screenshots go to
``docs/images/`` when SKILLS_CONSOLE_SCREENSHOTS=1 (how docs/console.md's were made), else to
the test's temporary folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import ACTOR, TOKEN

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


NAVIGATION = ["Skills", "Review queue", "Canaries", "Subjects"]
#: a skill whose code has a line far wider than its column, and a docstring with an Args: section
LABEL = (
    "def label_shelf(aisle: str, text: str = 'fresh') -> dict:\n"
    '    """Print a label for the shelf of an aisle.\n\n'
    "    One label per call; the printer keeps no queue.\n\n"
    "    Args:\n"
    "        aisle (str): the aisle whose shelf is labelled\n"
    "        text (str): what the label says\n"
    '    """\n'
    "    return restock(item='label-' + aisle + '-' + text + '-with-a-suffix-long-enough-that-this-line-is-far-"
    "wider-than-the-code-column-of-the-page-and-must-wrap', count=1)\n"
)


def assert_navigation(page) -> None:
    """The header's navigation leads to every page, the current one marked."""
    links = page.locator("header nav a")
    assert links.all_inner_texts() == NAVIGATION, page.url
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert [h.split("?")[0] for h in hrefs] == ["/skills", "/review", "/canaries", "/subjects"]


def test_every_page_has_the_navigation_and_a_screenshot(browser, live_server, library, tmp_path):
    """Skills, a skill, the review queue (bulk approve of a checked row), canaries (the
    approved row started as one), subjects and the error page: each has the navigation, and
    each is photographed (into docs/images/ with SKILLS_CONSOLE_SCREENSHOTS=1). The skill
    page's long code line wraps and its docstring keeps its lines."""
    from governed_world import APPROVER, V_BAD, held, proposed

    from skill_library.models import Skill

    library.actors.add(APPROVER)
    name, version = held(library)
    _, failed = proposed(library, V_BAD, ["restock"])
    library.add(Skill.from_function(LABEL, when="print a label for the shelf of an aisle", tools=["restock"]))
    for n in range(6):
        library.patterns.record_transition("carol", "browsing", "checkout", session=f"s{n}")
    page = browser.new_page()
    page.goto(f"{live_server}/login?token={TOKEN}")

    assert page.url.endswith("/skills") and page.locator("#skills").count() == 1
    assert_navigation(page)
    screenshot(page, tmp_path, "console-skills.png")

    page.click("text=label_shelf")
    page.wait_for_load_state("load")
    assert_navigation(page)
    wraps = page.evaluate("() => { const p = document.querySelector('#code pre');"
                          " return [p.scrollWidth <= p.clientWidth + 1, getComputedStyle(p).whiteSpace]; }")
    assert wraps == [True, "pre-wrap"]  # the long line wraps inside its column
    docstring = page.locator("#docstring")
    assert docstring.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"
    assert "shelf of an aisle.\n\nOne label per call" in docstring.inner_text()  # as written
    assert "the aisle whose shelf is labelled" in page.locator("#parameters").inner_text()
    page.screenshot(path=str(tmp_path / "skill-wrapped.png"))

    page.click("header nav >> text=Review queue")
    page.wait_for_load_state("load")
    assert_navigation(page)
    row = page.locator(f"#review-{name}-{version}")
    assert page.locator(f"#review-{name}-{failed} input[name=pick]").count() == 0  # failed: nothing to approve
    assert "--world MODULE:NAME" in page.locator(f"#review-{name}-{failed} .hint").inner_text()
    row.locator("input[name=pick]").check()
    row.locator("details").evaluate("d => { d.open = true; }")
    assert "undeclared: counted as side effects" in row.locator("table.tools").inner_text()
    screenshot(page, tmp_path, "console-review.png")
    page.fill("#bulk input[name=reason]", "diff and suite read fine")
    page.click("#approve-selected")
    page.wait_for_load_state("load")
    assert f"approved 1 of 1 selected: {name} v{version}" in page.locator(".notice").inner_text()
    assert library.get(name, version).status == "approved"

    approved = page.locator(f"#approved-{name}-{version}")
    approved.locator("input[name=share]").fill("20")
    approved.locator("button[value=canary]").click()
    page.wait_for_load_state("load")
    assert page.url.split("?")[0].endswith("/canaries") and library.get(name, version).status == "canary"
    assert_navigation(page)
    assert page.locator(f"#canary-{name}-{version}").count() == 1
    screenshot(page, tmp_path, "console-canaries.png")

    page.click("header nav >> text=Subjects")
    page.fill("input[name=subject]", "carol")
    page.click("text=Explain")
    page.wait_for_load_state("load")
    assert_navigation(page)
    assert page.locator("#patterns").count() == 1
    screenshot(page, tmp_path, "console-subjects.png")

    response = page.goto(f"{live_server}/skills/no_such_skill")
    assert response is not None and response.status == 404
    assert_navigation(page)
    assert "no skill named 'no_such_skill'" in page.locator("#message").inner_text()
    assert page.locator("#actor").inner_text() == ACTOR  # logged in: the whole header
    screenshot(page, tmp_path, "console-error.png")
    page.click("header nav >> text=Review queue")  # the error page leads back
    page.wait_for_load_state("load")
    assert page.locator("h1").inner_text() == "Review queue"

    browser.clear_cookies()  # logged out: the refusal page has the navigation too
    response = page.goto(f"{live_server}/canaries")
    assert response is not None and response.status == 401
    assert_navigation(page)


def test_the_header_box_checks_every_approvable_row(browser, live_server, library):
    """The queue's header checkbox (static/console.js, allowed by the CSP) checks each row
    that can be approved, not the failed draft, which has no box."""
    from governed_world import APPROVER, V_BAD, held, proposed

    library.actors.add(APPROVER)
    name, version = held(library)
    _, failed = proposed(library, V_BAD, ["restock"])
    page = browser.new_page()
    errors: list[str] = []  # script errors and CSP refusals (a missing favicon is neither)
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" and "Failed to load resource" not in message.text else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    page.goto(f"{live_server}/login?token={TOKEN}")
    page.click("header nav >> text=Review queue")
    page.wait_for_load_state("load")
    page.check("#pick-all")
    assert page.locator("input[name=pick]:checked").count() == 1
    assert page.locator(f"#review-{name}-{version} input[name=pick]").is_checked()
    page.uncheck("#pick-all")
    assert page.locator("input[name=pick]:checked").count() == 0
    assert errors == []  # no CSP violation, no script error
