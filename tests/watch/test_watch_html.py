"""The ``--html`` page: parsed (charts, a marker per finding at its step, nothing fetched), and,
where Chromium is installed, rendered headless to a screenshot (skipped cleanly without it)."""

from __future__ import annotations

import math
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from torchwise.watch.events import EventLog
from torchwise.watch.html import page


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture
def run_log(tmp_path) -> Path:
    log = EventLog(tmp_path / "events.jsonl")
    log.write("start", subject="train.py", rank=0, world_size=1)
    for step in range(1, 401, 5):
        loss = 2.0 * math.exp(-step / 100) + (float("nan") if step > 300 else 0.1)
        log.sample(step=step, loss={"train.py:40": loss, "train.py:52": 0.5}, grad_norm={"fc1": 0.5, "fc2": 0.2},
                   update_ratio={"fc1": 1e-3, "fc2": 2e-3}, lr=[1e-3], loader_wait=0.05, step_ms=12.0, memory_mb=400.0)
    log.write("finding", code="TW112", severity="error", message="NaN <first> in fc1", where="fc1", evidence={}, fix="lower the lr", step=301)
    log.write("finding", code="TW131", severity="warning", message="dead units", where="fc2", evidence={}, fix="kaiming init", step=20)
    log.close()
    return tmp_path / "events.jsonl"


def test_page_holds_every_chart_and_each_finding_at_its_step(run_log):
    html = page([run_log], "train.py", "the script ran to its end (400 steps)")
    p = Page()
    p.feed(html)
    svgs = [a for t, a in p.tags if t == "svg"]
    titles = [t for t in p.text if t.startswith(("Loss", "Gradient", "Update", "Share", "Step time", "Learning", "Memory"))]
    assert len(svgs) == 7 and len(set(titles)) == 7
    paths = [a for t, a in p.tags if t == "path"]
    assert len(paths) >= 2 + 2 + 2 + 4  # two objectives, two layers in two charts, one line in the others
    markers = [a for t, a in p.tags if t == "line" and a.get("class") == "marker"]
    assert len(markers) == 2 * 7  # each finding on each chart
    assert "NaN &lt;first&gt; in fc1" in html  # escaped
    rows = [t for t in p.text if t.strip() in ("301", "20")]
    assert rows == ["20", "301"]  # the table in step order
    assert not any(k in a for t, a in p.tags for k in ("src",)) and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    loss_path = next(a["d"] for a in paths if "train.py:40" in html and a.get("stroke") == "#1f77b4")
    assert loss_path.count("M") == 1  # the NaN tail ends the line, it is not drawn as zero


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed (apt-get install chromium)")
def test_page_renders_in_headless_chromium(run_log, tmp_path):
    html_path = tmp_path / "run.html"
    html_path.write_text(page([run_log], "train.py", "the script ran to its end (400 steps)"))
    shot = tmp_path / "run.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1300,1400", f"--screenshot={shot}",
                    html_path.as_uri()], capture_output=True, timeout=120, check=False)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000  # a drawn page, not a blank one
