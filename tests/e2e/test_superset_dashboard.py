"""Real BI tool: Apache Superset (``.venv-bi``, ``make bi-venv``) over the real Thrift server, on the
e2e package's shared stack, logged in there as the read-only BI user (``analyst``). Superset itself
admits no anonymous request and signs sessions with a generated ``SECRET_KEY``. Data comes from the CLI as a user makes it (produce, speed, late events,
batch), so the dashboard has provisional, corrected and final windows, quarantined records and
speed progress. Headless Debian Chromium driven by Playwright logs in with the generated password,
opens the provisioned dashboard and checks that every chart rendered with data. Provisioning runs
twice: nothing is duplicated. Screenshot: ``tests/artifacts/superset-dashboard.png``."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser import ARGS, ARTIFACTS, CHROMIUM

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]  # a loaded 2-core machine: a batch run can take minutes
PIPELINE = "sensor_readings"


def cli(*args: str, timeout: float = 1800) -> None:
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", *args], capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, (args, out.stdout[-2000:], out.stderr[-3000:])


def make_data(cfg: Any) -> None:
    """The demo's loop, smaller: on-time events (1% malformed), the speed job, late events behind its
    watermark (bronze keeps them, speed drops them: the batch corrects those windows), a batch run."""
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.speed.control import wait_caught_up
    from tests.integration.alert_checks import wait_alerts_caught_up

    p = load_pipeline(PIPELINE, cfg.pipelines)

    start_ms = (int(time.time() * 1000) - 30 * 60_000) // 60_000 * 60_000
    cli("produce", PIPELINE, "--count", "1200", "--start-ms", str(start_ms), "--step-ms", "500",
        "--malformed", "0.01", "--seed", "21", "--id-prefix", "bi-a")
    cli("speed", "start", PIPELINE)
    assert wait_caught_up(cfg, p, timeout=900, job_must_run=True), "speed job did not catch up"
    cli("produce", PIPELINE, "--count", "60", "--start-ms", str(start_ms + 60_000), "--step-ms", "2000",
        "--seed", "22", "--id-prefix", "bi-b")
    cli("produce", PIPELINE, "--count", "400", "--start-ms", str(start_ms + 10 * 60_000), "--step-ms", "500",
        "--malformed", "0.01", "--seed", "23", "--id-prefix", "bi-c")
    assert wait_caught_up(cfg, p, timeout=900, job_must_run=True), "speed job did not catch up"
    wait_alerts_caught_up(cfg, p, timeout=900)  # the alerts chart's rows
    cli("speed", "stop", PIPELINE)
    cli("batch", PIPELINE)


@pytest.fixture(scope="module")
def bi(stack: Any) -> Iterator[Any]:
    """Thrift server and Superset started (in a thread) while the CLI makes the data."""
    from infra.services import superset, thrift_server
    from infra.services.ports import free_port

    if not Path(superset.VENV / "bin" / "superset").exists():
        pytest.fail(f"{superset.VENV} is missing: 'make test' builds it ('make bi-venv')")
    cfg = dataclasses.replace(stack, bi=dataclasses.replace(stack.bi, enabled=True, port=free_port()))
    errors: list[BaseException] = []

    def services() -> None:
        try:
            started = time.monotonic()
            superset.start(cfg)
            print(f"\nSuperset provisioned and healthy in {time.monotonic() - started:.1f}s", flush=True)
            thrift_server.start(cfg)
        except BaseException as exc:  # noqa: BLE001 (re-raised in the test thread)
            errors.append(exc)

    started = time.monotonic()
    worker = threading.Thread(target=services)
    worker.start()
    try:
        make_data(cfg)
        worker.join()
        if errors:
            raise errors[0]
        print(f"data + Thrift server + Superset ready in {time.monotonic() - started:.1f}s", flush=True)
        yield cfg
    finally:
        worker.join()
        superset.stop(cfg)
        thrift_server.stop(cfg)


def api(cfg: Any, path: str) -> Any:
    """Superset's REST API as the admin user (session cookie from the form login)."""
    from infra.services import superset

    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    body = json.dumps({"username": superset.USER, "password": superset.password(cfg), "provider": "db"}).encode()
    req = urllib.request.Request(f"{superset.base_url(cfg)}/api/v1/security/login", data=body,
                                 headers={"Content-Type": "application/json"})
    with opener.open(req, timeout=30) as resp:
        tok = json.loads(resp.read())["access_token"]
    req = urllib.request.Request(f"{superset.base_url(cfg)}{path}", headers={"Authorization": f"Bearer {tok}"})
    with opener.open(req, timeout=60) as resp:
        return json.loads(resp.read())


def log_in(page: Any, cfg: Any) -> None:
    """The login form, filled and sent as a user does. On a loaded 2-core machine the single-page app
    can mount the form again after its first paint, which empties the fields (CI: the Enter then sent
    nothing and the page sat on /login). So the fields are read back before the click, and a click that
    sent no POST is repeated. CI also saw, once in many runs, a sent POST that left the browser on /login
    with nothing in Superset's log: as a user would, the login is then sent again, up to three times in
    all, and every such attempt's navigations (status, Location) and cookies are kept in
    ``tests/artifacts/superset-login-attempts.log``. A wrong password fails all three."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from infra.services import superset

    secret = superset.password(cfg)
    seen: list[str] = []

    def keep(r: Any) -> None:  # navigations and refusals: where a lost login shows
        if r.request.is_navigation_request() or r.status in (401, 403):
            seen.append(f"{time.monotonic():.2f} {r.request.method} {r.status} {r.url[:100]} -> "
                        f"{(r.headers.get('location') or '')[:100]}")

    page.on("response", keep)
    failed: list[str] = []
    for _ in range(3):
        page.wait_for_load_state("networkidle", timeout=120_000)
        page.locator("#username").fill(superset.USER)
        page.locator("#password").fill(secret)
        if page.input_value("#username") != superset.USER or page.input_value("#password") != secret:
            continue  # the form was mounted again between the fills
        seen.clear()
        try:
            with page.expect_request(lambda r: r.method == "POST" and "/login" in r.url, timeout=30_000):
                page.get_by_role("button", name="Sign in").click()
        except PlaywrightTimeout:
            continue  # the click reached a form that was being replaced
        try:
            page.wait_for_url(lambda u: "/login" not in u, timeout=120_000)
        except PlaywrightTimeout:
            failed.append(f"the login POST left the browser on {page.url}; the page says "
                          f"{page.locator('body').inner_text()[:300]!r}; cookies "
                          f"{sorted(c['name'] for c in page.context.cookies())}; responses:\n  " + "\n  ".join(seen))
            continue
        if failed:
            (ARTIFACTS / "superset-login-attempts.log").write_text("\n\n".join(failed) + "\n")
            print(f"\nlogged in after {len(failed)} failed attempt(s):\n" + "\n\n".join(failed), flush=True)
        me = page.request.get(f"{superset.base_url(cfg)}/api/v1/me/", timeout=60_000)
        assert me.ok, f"login sent, yet /api/v1/me/ answers {me.status}: {me.text()[:300]}"
        return
    raise AssertionError(f"no login in three attempts (page {page.url}):\n" + "\n\n".join(failed)
                         + f"\n{len(failed)} POST(s) sent; Superset log:\n{superset._process(cfg).tail(30)}")


def test_provisioning_is_idempotent_and_secret(bi: Any) -> None:
    from infra.services import superset
    from infra.superset import bundle

    assert oct(superset.secrets_file(bi).stat().st_mode & 0o777) == "0o600"
    superset.provision(bi)  # the second run: updates in place
    assert api(bi, "/api/v1/database/")["count"] == 1
    assert api(bi, "/api/v1/dataset/")["count"] == len(bundle.DATASETS)
    assert api(bi, "/api/v1/chart/")["count"] == len(bundle.CHARTS)
    assert api(bi, "/api/v1/dashboard/")["count"] == 1
    log = superset._process(bi).log_file.read_text(errors="replace")
    assert superset.password(bi) not in log


def test_no_anonymous_access_and_the_thrift_login_is_the_bi_users(bi: Any) -> None:
    """Anonymous API requests are refused; the database connection logs in as ``analyst`` (its password
    kept by Superset, masked in the API); the ``SECRET_KEY`` is generated, not Superset's default."""
    from infra.services import superset, thrift_access

    for path in ("/api/v1/dashboard/", "/api/v1/database/", "/api/v1/chart/", "/api/v1/me/"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{superset.base_url(bi)}{path}", timeout=30)
        assert refused.value.code == 401, path
    [database] = api(bi, "/api/v1/database/")["result"]
    uri = api(bi, f"/api/v1/database/{database['id']}/connection")["result"]["sqlalchemy_uri"]
    assert uri.startswith(f"hive://{thrift_access.READ_ONLY_USER}:XXXXXXXXXX@") and uri.endswith("auth=CUSTOM"), uri
    assert thrift_access.password(bi, thrift_access.READ_ONLY_USER) not in json.dumps(database)
    key = json.loads(superset.secrets_file(bi).read_text())["secret_key"]
    assert len(key) >= 32 and "CHANGE" not in key.upper()


def test_dashboard_renders_every_chart_with_data(bi: Any) -> None:
    from playwright.sync_api import sync_playwright

    from infra.services import superset
    from infra.superset import bundle

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install -y chromium)")
    ARTIFACTS.mkdir(exist_ok=True)
    started = time.monotonic()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1100})
        page.goto(superset.dashboard_url(bi), timeout=60_000)
        page.wait_for_url(lambda u: "/login" in u, timeout=60_000)  # login is required
        log_in(page, bi)
        page.goto(superset.dashboard_url(bi), timeout=120_000)
        assert "/login" not in page.url, f"logged in, yet the dashboard sent the browser to {page.url}"
        holders = page.locator(".dashboard-component-chart-holder")
        try:  # the dashboard's JS bundle is large: on a busy 2-core machine its first load took over 60 s
            holders.first.wait_for(timeout=240_000)
            for title in bundle.CHARTS:
                page.get_by_text(title, exact=True).first.wait_for(timeout=120_000)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "superset-dashboard-failed.png"), full_page=True)
            raise AssertionError(f"no dashboard at {page.url}; the page says:\n"
                                 f"{page.locator('body').inner_text()[:2000]}") from None
        assert holders.count() == len(bundle.CHARTS)
        for i in range(holders.count()):  # rendered: an ECharts canvas, or table rows (svg: only icons)
            holders.nth(i).locator("canvas, table tbody tr").first.wait_for(timeout=300_000)
        page.wait_for_timeout(2000)  # animations settle before the screenshot
        text = page.locator(".grid-container, #app").first.inner_text()
        for bad in ("No results", "Unexpected error", "Error", "DB engine Error"):
            assert bad not in text, f"{bad!r} on the dashboard:\n{text[:3000]}"
        assert page.locator("table tbody tr").count() > 0, "the corrected-windows table has no rows"
        page.screenshot(path=str(ARTIFACTS / "superset-dashboard.png"), full_page=True)
        browser.close()
    print(f"\ndashboard rendered {len(bundle.CHARTS)} charts in {time.monotonic() - started:.1f}s "
          f"({datetime.now(UTC):%H:%M:%S} UTC)")
