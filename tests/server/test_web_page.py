"""The live page in a real headless Chromium (Debian's, driven by Playwright): speak a preset and watch it play."""

from __future__ import annotations

import json
import shutil
import threading

import pytest

from server.scheduler import backend_factory
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
    assert page.text_content("#model") == "CustomVoice 0.6B"
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


def test_the_pronunciation_box_asks_for_the_servers_rules(browser, live_server):
    page = browser.new_page()
    sent = []

    def record(route):
        sent.append(json.loads(route.request.post_data))
        short_speech(route)

    page.route("**/v1/audio/speech", record)
    page.goto(live_server.url)
    page.wait_for_function("document.querySelectorAll('#voice option').length > 0")
    page.fill("#text", "Hello.")
    page.click("#speak")
    page.wait_for_function("window.oratorStats.done || window.oratorStats.error", timeout=60_000)
    assert "pronunciation" not in sent[-1]
    page.check("#pronunciation")
    page.click("#speak")
    page.wait_for_selector("#message.error")  # this server was started without rules: it says so
    assert sent[-1]["pronunciation"] is True
    assert "without pronunciation rules" in page.text_content("#message")
    page.close()


def test_the_page_shows_the_warm_up_then_loads_the_model_and_voices(browser, start_server, tiny_engine):
    """Opened while the server warms up, the page shows how far it is, then, once ready, the model and voices
    without a reload."""
    release = threading.Event()

    def make_backend(engine, progress):
        progress(2, 5, "the 4-stream frame step")
        release.wait(60)
        return backend_factory(1)(engine, None)

    warming = start_server(tiny_engine("custom_voice"), make_backend=make_backend, wait_for_model=False)
    page = browser.new_page()
    try:
        page.goto(warming.url)
        page.wait_for_function("document.getElementById('model').textContent.includes('(2/5, ')")
        assert page.text_content("#model").startswith("warming up: the 4-stream frame step (2/5, ")
        assert page.eval_on_selector_all("#voice option", "options => options.length") == 0
    finally:
        release.set()
    page.wait_for_function("document.querySelectorAll('#voice option').length > 0", timeout=60_000)
    assert page.text_content("#model") == "CustomVoice 0.6B"
    page.close()
