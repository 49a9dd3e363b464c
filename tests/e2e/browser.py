"""The e2e package's real browser: headless Debian Chromium driven by Playwright, logged in to the
package's Airflow UI. Screenshots go to ``tests/artifacts/`` (git-ignored)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from lakehouse.config import TidewaterConfig

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@contextmanager
def logged_in_page(cfg: TidewaterConfig) -> Iterator[Any]:
    """A page of the Airflow UI past its login form (the generated admin password): an anonymous
    visitor is first sent to the form, which the test checks."""
    from playwright.sync_api import sync_playwright

    from infra.services import airflow

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install -y chromium)")
    ARTIFACTS.mkdir(exist_ok=True)
    url = airflow.base_url(cfg)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/dags", timeout=60_000)
            page.wait_for_url(lambda u: "/auth/login" in u, timeout=60_000)
            assert "/auth/login" in page.url
            page.fill("input[name=username]", airflow.USER)
            page.fill("input[name=password]", airflow.password(cfg))
            page.locator("button[type=submit]").click()
            page.wait_for_url(lambda u: "/auth/login" not in u, timeout=60_000)
            yield page
        finally:
            browser.close()
