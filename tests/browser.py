"""A real headless Chromium for the console's browser tests: Debian's chromium and chromium-driver,
driven by Selenium (pinned in requirements-dev.txt). Missing, the tests fail saying how to install it.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Iterator

import pytest

INSTALL = "apt-get update && apt-get install -y chromium chromium-driver"


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
