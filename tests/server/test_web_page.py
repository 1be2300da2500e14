"""The live page in a real headless Chromium (Debian's, driven by Playwright): speak a preset and watch it play."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.server.helpers import SAMPLES_PER_FRAME

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--autoplay-policy=no-user-gesture-required"]
FRAMES = 5


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not shutil.which("chromium"):
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


def short_speech(route):
    """Keep the tiny model's speech short: a frame budget and one-frame chunks added to the page's request."""
    body = json.loads(route.request.post_data)
    route.continue_(post_data=json.dumps({**body, "max_frames": FRAMES, "chunk_frames": 1, "seed": 2}))


def test_speak_a_preset_and_see_it_stream(browser, live_server):
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/v1/audio/speech", short_speech)
    page.goto(live_server.url)
    page.wait_for_function("document.querySelectorAll('#voice option').length > 0")
    assert "custom_voice" in page.text_content("#model")
    page.fill("#text", "Hello from the browser.")
    page.select_option("#voice", "serena")
    page.click("#speak")
    page.wait_for_function("window.oratorStats.done || window.oratorStats.error", timeout=60_000)
    stats = page.evaluate("window.oratorStats")
    assert stats["error"] is None and stats["done"] is True
    assert stats["samples"] == FRAMES * SAMPLES_PER_FRAME
    assert 0 < stats["ttfa"] < 60 and stats["rtf"] > 0
    assert page.text_content("#stat-ttfa").endswith("ms")
    assert float(page.text_content("#stat-rtf")) == pytest.approx(stats["rtf"], abs=1e-3)
    assert page.text_content("#history tbody tr td:last-child") == "done"
    assert page.text_content("#history tbody tr td:nth-child(2)") == "serena"
    assert errors == []
    page.close()


def test_an_error_is_shown_not_swallowed(browser, live_server):
    page = browser.new_page()
    page.goto(live_server.url)
    page.wait_for_function("document.querySelectorAll('#voice option').length > 0")
    page.fill("#text", "   ")
    page.click("#speak")
    page.wait_for_selector("#message.error")
    assert "no text" in page.text_content("#message")
    page.close()
