"""`hpceval report`'s page in real headless Chromium: figures decoded, no console errors, every
table and figure inside the window, the findings' answers.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import Result

from tests.cli_helpers import invoke, read_csv
from tests.test_report import CHROMIUM, EVIL, EXPECTED_FIGURES
from tests.test_report import report as report  # the fixture (module scope: built here again)


class DevTools:
    """A minimal Chrome DevTools Protocol client over the browser's websocket."""

    def __init__(self, url: str) -> None:
        import websocket  # websocket-client (dev dependency)

        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.events: list[dict[str, Any]] = []
        self._id = 0

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait(self, method: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while time.monotonic() < deadline:
            event = json.loads(self.ws.recv())
            self.events.append(event)
            if event.get("method") == method:
                return event
        raise TimeoutError(method)

    def evaluate(self, session: str, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", session, expression=expression, returnByValue=True)
        return reply["result"]["value"]


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[DevTools]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("chromium is not installed (Debian package chromium; ./setup.sh installs it)")
    profile = tmp_path / "profile"
    log = (tmp_path / "chromium.log").open("w")
    argv = [
        CHROMIUM, "--headless", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--no-default-browser-check", "--disable-background-networking", "--disable-extensions",
        "--disable-sync", "--remote-debugging-port=0", f"--user-data-dir={profile}",
        "--window-size=1280,1600", "about:blank",
    ]
    if os.geteuid() == 0:
        argv.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            assert process.poll() is None, (tmp_path / "chromium.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "Chromium did not open its DevTools port"
            time.sleep(0.1)
        port, path = port_file.read_text().splitlines()[:2]
        client = DevTools(f"ws://127.0.0.1:{port}{path}")
        yield client
        client.ws.close()
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_page_in_headless_chromium(
    report: tuple[Path, Path, Result], chromium: DevTools, tmp_path: Path
) -> None:
    _, out, _ = report
    page_url = (out / "index.html").resolve().as_uri()
    target = chromium.call("Target.createTarget", url="about:blank")["targetId"]
    session = chromium.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Page", "Network", "Runtime", "Log"):
        chromium.call(f"{domain}.enable", session)
    chromium.call("Page.navigate", session, url=page_url)
    chromium.wait("Page.loadEventFired")
    figures = chromium.evaluate(session, "document.querySelectorAll('img.report-figure').length")
    decoded = chromium.evaluate(
        session,
        "Array.from(document.querySelectorAll('img.report-figure'))"
        ".filter(i => i.complete && i.naturalWidth > 100 && i.naturalHeight > 100).length",
    )
    assert figures == decoded == len(EXPECTED_FIGURES)
    assert chromium.evaluate(session, "document.scripts.length") == 0
    assert EVIL in chromium.evaluate(session, "document.body.innerText")
    shot = chromium.call("Page.captureScreenshot", session, format="png")
    png = base64.b64decode(shot["data"])
    (tmp_path / "report.png").write_bytes(png)
    # no request but the page itself; no console error, exception or CSP violation
    mine = [e for e in chromium.events if e.get("sessionId") == session]
    requests = [e["params"]["request"]["url"] for e in mine
                if e["method"] == "Network.requestWillBeSent"]
    assert requests and all(u == page_url or u.startswith("data:") for u in requests), requests
    errors = [e for e in mine if e["method"] == "Runtime.exceptionThrown"
              or (e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
              or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert not errors, errors
    # the screenshot shows something: many colours and a real spread of brightness
    from PIL import Image

    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float64)
    assert image.shape[0] > 500 and image.shape[1] > 500
    colours = len(np.unique(image.reshape(-1, 3), axis=0))
    assert colours > 50, colours
    assert image.std() > 20, image.std()


# --------------------------------------------------------------------------- layout (issue 23)

FITS_THE_WINDOW = """(() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll('main *')) {
    if (el.closest('.table-wrap') && el.tagName !== 'TABLE') continue;
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > width + 1) {
      out.push(`${el.tagName}#${el.id || (el.closest('section') || {}).id} ends at ${r.right}`);
    }
  }
  for (const wrap of document.querySelectorAll('.table-wrap')) {
    if (wrap.scrollWidth > wrap.clientWidth + 1) {
      const title = wrap.previousElementSibling ? wrap.previousElementSibling.id : '?';
      out.push(`${title} cut: ${wrap.scrollWidth} > ${wrap.clientWidth}`);
    }
  }
  return {width, page: document.documentElement.scrollWidth, problems: out};
})()"""


@pytest.mark.parametrize("width", [1400, 800])
def test_every_table_and_figure_fits_the_window(
    report: tuple[Path, Path, Result], chromium: DevTools, tmp_path: Path, width: int
) -> None:
    """At 1400 and 800 px nothing of the page, no table column, lies beyond the window's
    right edge; the findings come first and the caveats of emulated data stand beside the
    results (screenshots kept in the test's tmp dir)."""
    _, out, _ = report
    target = chromium.call("Target.createTarget", url="about:blank")["targetId"]
    session = chromium.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    chromium.call("Page.enable", session)
    chromium.call("Emulation.setDeviceMetricsOverride", session, width=width, height=1000,
                  deviceScaleFactor=1, mobile=False)  # fmt: skip
    chromium.call("Page.navigate", session, url=(out / "index.html").resolve().as_uri())
    chromium.wait("Page.loadEventFired")
    layout = chromium.evaluate(session, FITS_THE_WINDOW)
    shot = chromium.call("Page.captureScreenshot", session, format="png",
                         captureBeyondViewport=True)  # fmt: skip
    (tmp_path / f"report-{width}.png").write_bytes(base64.b64decode(shot["data"]))
    assert width - 20 <= layout["width"] <= width  # less a vertical scroll bar
    assert layout["problems"] == [], layout
    assert layout["page"] <= layout["width"], layout
    first = chromium.evaluate(session, "document.querySelector('main section').id")
    assert first == "findings"
    caveats = chromium.evaluate(
        session, "Array.from(document.querySelectorAll('#overhead .caveat li'), e => e.textContent)"
    )
    assert any(c.startswith("netns: emulated") for c in caveats), caveats


def test_the_deadline_answer_is_in_the_findings(
    report: tuple[Path, Path, Result], tmp_path: Path
) -> None:
    """--deadline: per NPB problem, the cheapest priced run that finishes within it, or that
    none does; a deadline that is not a positive number is a one-line error."""
    db, out, _ = report
    plain = read_csv(out / "tables/findings.csv")
    assert any(r["question"].startswith("cheapest configuration: npb") for r in plain)
    common = ["--db", str(db), "--baseline", "bare", "--catalog", str(db.parent / "prices.toml"),
              "--instance", f"{EVIL}=cloud", "--min-repetitions", "1"]  # fmt: skip
    within = tmp_path / "within"
    r = invoke("report", "--out", str(within), *common, "--deadline", "1e9")
    assert r.exit_code == 0, r.output
    rows = read_csv(within / "tables/findings.csv")
    answered = [r for r in rows if r["question"].startswith("cheapest within 1e+09 s: npb")]
    assert answered and all(r["platform"] != "—" for r in answered)
    # with every run allowed the answer is the plain cheapest configuration's
    cheapest = {r["question"].split(": ", 1)[1]: r["answer"] for r in plain
                if r["question"].startswith("cheapest configuration")}  # fmt: skip
    assert {r["question"].split(": ", 1)[1]: r["answer"] for r in answered} == cheapest
    none = tmp_path / "none"
    r = invoke("report", "--out", str(none), *common, "--deadline", "0.001")
    assert r.exit_code == 0, r.output
    rows = read_csv(none / "tables/findings.csv")
    missed = [r for r in rows if r["question"].startswith("cheapest within 0.001 s")]
    assert missed and all(r["answer"] == "no configuration meets the deadline" for r in missed)
    bad = invoke("report", "--out", str(tmp_path / "bad"), *common, "--deadline", "-5")
    assert bad.exit_code == 2
    assert "--deadline -5: not a positive number of seconds" in bad.output
