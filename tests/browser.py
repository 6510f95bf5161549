"""A real headless Chromium for the console's browser tests: Debian's chromium and chromium-driver,
driven by Selenium (pinned in requirements-dev.txt). Missing, the tests fail saying how to install it.

A pytest plugin (tests/conftest.py loads it): the ``browser`` and ``console`` fixtures every browser
test uses, and the waits and console actions they share.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any, Callable, Iterator
from urllib.parse import unquote

import pytest

INSTALL = "apt-get update && apt-get install -y chromium chromium-driver"
# Seconds a browser test waits for the page to show something before it fails naming what it waited for.
TIMEOUT = 30


def chromium() -> Iterator:
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.fail(f"The console's browser tests need Chromium and its driver, not found on PATH; install them with: {INSTALL}",
                    pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        # Headless, and nothing that reaches the network: this machine has none but loopback.
        for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--window-size=1400,1200", f"--user-data-dir={profile}"):
            options.add_argument(flag)
        session = webdriver.Chrome(options=options, service=Service(driver))
        try:
            yield session
        finally:
            session.quit()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture(scope="module")
def console(deployment) -> Iterator[Any]:
    """The console served over the session's deployment; the clock is left as the session found it
    (running, instantly), whatever the page's controls did to it."""
    from emulator.clock import INSTANT
    from emulator.console import Console

    with Console(deployment) as running:
        yield running
    deployment.aws.clock.set_speed(INSTANT)
    deployment.aws.clock.resume()


def until(browser: Any, condition: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> None:
    """Wait until ``condition()`` is truthy, asking again while what it reads is not drawn yet or was
    drawn again under it (the console's pages redraw when what they show changes)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, timeout, poll_frequency=0.1,
                  ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(
        lambda _: condition(), message=what)


def step_clock_until(browser: Any, condition: Callable[[], Any], what: str, steps: int = 10) -> int:
    """With the clock paused, advance it a second at a time from the console until ``condition()``
    holds, as a person does while a handler sleeps in simulated time (a notification waiting for its
    slot in the Slack webhook's pace, docs/alert-notification.md); returns the seconds advanced."""
    from selenium.common.exceptions import TimeoutException

    for stepped in range(steps):
        try:
            until(browser, condition, what, timeout=3)
            return stepped
        except TimeoutException:
            advance_clock(browser, 1)
    until(browser, condition, what)
    return steps


def click(browser: Any, find: Callable[[], Any], what: str) -> None:
    """Click the element ``find()`` returns, finding it again if the page redraws it before the click lands."""
    until(browser, lambda: find().click() or True, what)


def advance_clock(browser: Any, seconds: int) -> None:
    """Advance the simulated clock from the console's clock controls."""
    from selenium.webdriver.common.by import By

    field = browser.find_element(By.ID, "clock-seconds")
    field.clear()
    field.send_keys(str(seconds))
    browser.find_element(By.ID, "clock-advance").click()


def shown_execution(browser: Any) -> str:
    """The ARN of the execution the console's page shows (its address ends ``#/execution/<ARN>``)."""
    return unquote(browser.current_url.split("#/execution/", 1)[1])
