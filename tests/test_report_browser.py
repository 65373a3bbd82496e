"""The report as a person sees it: opened in headless Chromium (Debian's `chromium`; .ci/run installs it).

The page script marks the document once every chart has drawn (`data-tw-drawn`, `data-tw-markers`), so
the dumped DOM says whether uPlot ran; the screenshot must not be blank."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trainwatch.cli import main

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; "
                                                          ".ci/run installs it)")
FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--virtual-time-budget=5000",
         "--enable-logging=stderr", "--v=0"]


def chromium(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, *FLAGS, *args, page.as_uri()], capture_output=True, text=True,
                          timeout=120, check=False)


def console_errors(stderr: str) -> list[str]:
    """What the page logged or threw (chromium prints each as a CONSOLE line with --enable-logging): the
    report logs nothing, so any such line is a fault."""
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


def hostile_blowup(tmp_path: Path) -> Path:
    text = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "blowup_repro.py")],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    text.insert(25, "note </script><script>document.title='pwned'</script> <b id=injected>x</b> \\u003c/script> "
                    "\x1b[31mred\x1b[0m \x1b]0;title\x07")
    path = tmp_path / "before.log"
    path.write_text("\n".join(text) + "\n")
    return path


def test_report_renders_charts_and_a_marker_per_finding(tmp_path: Path) -> None:
    log = hostile_blowup(tmp_path)
    out = tmp_path / "r.html"
    main(["report", str(log), "-o", str(out)])
    r = chromium(out, "--dump-dom")
    dom = r.stdout
    drawn = re.search(r'data-tw-drawn="(\d+)"', dom)
    markers = re.search(r'data-tw-markers="(\d+)"', dom)
    assert drawn and int(drawn.group(1)) >= 3, r.stderr[-2000:]
    assert dom.count('class="uplot') >= 3
    import json

    data = json.loads(re.search(r'id="tw-data">(.*?)</script>', out.read_text(), re.S).group(1))  # type: ignore[union-attr]
    findings = data["runs"][0]["doc"]["findings"]
    assert markers and int(markers.group(1)) == sum(f["at"] is not None for f in findings)
    for i, _ in enumerate(findings):
        assert f'data-finding="0-{i}"' in dom
    assert not console_errors(r.stderr), console_errors(r.stderr)


def test_hostile_log_line_stays_text(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    main(["report", str(hostile_blowup(tmp_path)), "-o", str(out)])
    dom = chromium(out, "--dump-dom").stdout
    assert "<title>trainwatch: before.log</title>" in dom  # the injected script never ran
    assert 'id="injected"' not in dom and "<b id=" not in dom
    assert "&lt;/script&gt;&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom  # shown as text
    assert "\\u003c/script&gt; red" in dom and "\x1b" not in dom and "\x07" not in dom  # escapes made plain


def test_comparison_renders_both_runs(tmp_path: Path) -> None:
    before = hostile_blowup(tmp_path)
    after = tmp_path / "after.log"
    rows = (f"Step {s}: loss={2.43 - s / 40:.4f}, lr=3e-4, grad_norm=1" for s in range(1, 41))
    after.write_text("\n".join(rows) + "\n")
    out = tmp_path / "c.html"
    main(["report", str(before), str(after), "-o", str(out)])
    dom = chromium(out, "--dump-dom").stdout
    assert re.search(r'data-tw-drawn="[1-9]', dom)
    assert "Findings: before.log" in dom and "Findings: after.log" in dom
    assert "after.log: no loss is diverging (before.log: loss.diverging at step 25)" in dom


@pytest.mark.parametrize("size", ["1280,900", "390,844"])
def test_screenshot_is_not_blank(tmp_path: Path, size: str) -> None:
    png = tmp_path / "shot.png"
    out = tmp_path / "r.html"
    main(["report", str(hostile_blowup(tmp_path)), "-o", str(out)])
    chromium(out, f"--window-size={size}", f"--screenshot={png}")
    assert png.exists()
    pixels = _png_colours(png)
    assert pixels > 20, f"the screenshot has {pixels} colours: blank"


def _png_colours(png: Path) -> int:
    """Distinct pixel-sized byte groups in a PNG's (still filtered) rows, read with zlib only (no imaging
    library is a dependency): a blank page's rows filter to one or two values, a drawn one to many."""
    import struct
    import zlib

    raw = png.read_bytes()
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(raw):
        length, kind = struct.unpack(">I4s", raw[pos:pos + 8])
        body = raw[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, _, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 4 if ctype == 6 else 3
    data = zlib.decompress(idat)
    stride = width * bpp + 1
    seen: set[bytes] = set()
    for row in range(0, height, max(1, height // 60)):
        line = data[row * stride + 1:(row + 1) * stride]
        seen.update(line[i:i + bpp] for i in range(0, len(line), bpp * 7))
    return len(seen)


HARNESS = """<script>
// test only: after the charts drew, click the first critical marker, then turn on log scale and smoothing
setTimeout(function () {
  var m = document.querySelector(".tw-marker.tw-critical");
  m.click();
  var det = document.getElementById("f-" + m.dataset.finding);
  document.documentElement.setAttribute("data-t-open", String(det.open));
  document.documentElement.setAttribute("data-t-loglines", String(det.querySelectorAll(".tw-line").length));
  var log = document.getElementById("tw-log");
  log.checked = true;
  log.dispatchEvent(new Event("change"));
  var sm = document.getElementById("tw-smooth");
  sm.value = "0.9";
  sm.dispatchEvent(new Event("change"));
  setTimeout(function () {
    document.documentElement.setAttribute("data-t-redrawn", String(document.querySelectorAll(".uplot").length));
  }, 200);
}, 500);
</script>"""


def test_a_marker_click_opens_its_finding_and_toggles_redraw(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    main(["report", str(hostile_blowup(tmp_path)), "-o", str(out)])
    out.write_text(out.read_text().replace("</body>", HARNESS + "</body>"))
    r = chromium(out, "--dump-dom")
    dom = r.stdout
    assert 'data-t-open="true"' in dom, r.stderr[-2000:]
    assert 'data-t-loglines="13"' in dom  # the finding's line and six either side
    assert 'data-t-redrawn="3"' in dom  # log scale and smoothing drew the same three charts again
    assert not console_errors(r.stderr), console_errors(r.stderr)
