"""`trainwatch report`: the page's data, its safety with hostile log text, Markdown, comparison, errors."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trainwatch.cli import main
from trainwatch.report import html
from trainwatch.report.downsample import minmax
from trainwatch.sinks.report import _plan_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "logs"


def blowup_log(tmp_path: Path, name: str = "before.log") -> Path:
    out = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "blowup_repro.py")],
                         capture_output=True, text=True, check=True).stdout
    path = tmp_path / name
    path.write_text(out)
    return path


def healthy_log(tmp_path: Path, name: str = "after.log", steps: int = 40) -> Path:
    lines = [f"Step {s}: loss={2.43 - 1.2 * s / steps:.4f}, lr=3e-4, grad_norm=1" for s in range(1, steps + 1)]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def page_data(page: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="tw-data">(.*?)</script>', page, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


# ---- downsampling keeps extremes ----

def test_minmax_keeps_a_one_row_spike_and_a_nan_among_a_million() -> None:
    n = 1_000_000
    x = np.arange(n, dtype=np.float64)
    y = np.ones(n)
    y[123_457] = 1e6
    y[765_431] = -5.0
    lo, hi = y.copy(), y.copy()
    bad = np.zeros(n, dtype=bool)
    bad[500_001] = True
    lo[500_001] = hi[500_001] = np.nan
    xs, ys = minmax(x, lo, hi, bad, columns=1000)
    assert len(xs) <= 3 * 1000
    assert np.nanmax(ys) == 1e6 and np.nanmin(ys) == -5.0
    assert np.isnan(ys).sum() == 1
    assert abs(xs[np.flatnonzero(np.isnan(ys))[0]] - 500_001) < n / 1000
    assert bool((xs[1:] >= xs[:-1]).all())


def test_minmax_keeps_short_curves_as_they_are() -> None:
    x = np.array([1.0, 2.0, 3.0])
    lo = np.array([1.0, 5.0, np.nan])
    xs, ys = minmax(x, lo, lo)
    assert xs.tolist() == [1.0, 2.0, 3.0]
    assert ys[:2].tolist() == [1.0, 5.0] and math.isnan(ys[2])


# ---- the page ----

def test_html_report_of_the_blowup_holds_findings_curves_and_log_lines(tmp_path: Path) -> None:
    log = blowup_log(tmp_path)
    out = tmp_path / "r.html"
    assert main(["report", str(log), "-o", str(out)]) == 2  # critical, as check says
    page = out.read_text()
    data = page_data(page)
    run = data["runs"][0]
    root = run["doc"]["findings"][0]
    assert root["id"] == "loss.diverging" and root["step"] == 25
    assert [n for n, _ in root["context"]] == list(range(root["line"] - 6, root["line"] + 7))
    assert dict(root["context"])[25].startswith("Step 25: loss=3.6106")
    assert set(run["charts"]) >= {"Loss", "Learning rate", "Gradient norm"}
    loss = run["charts"]["Loss"][0]
    assert loss["name"] == "loss" and None in loss["y"] and max(v for v in loss["y"] if v is not None) > 290
    assert len(run["homes"]) == len(run["doc"]["findings"])


def test_page_fetches_nothing(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    main(["report", str(EXAMPLES / "hf_high_lr.log"), "-o", str(out)])
    page = out.read_text()
    assert not re.search(r"https?://", page)
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", page)
    assert "@import" not in page


def test_hostile_log_text_cannot_leave_the_data_block(tmp_path: Path) -> None:
    hostile = "</script><script>document.title='pwned'</script><!-- \u2028 &amp; \x1b[31m"
    data = {"runs": [{"label": hostile}]}
    text = html.json_for_script(data)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == data


def test_md_summary_escapes_markup_and_lists_fixes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = blowup_log(tmp_path)
    with log.open("a") as f:
        f.write("Traceback (most recent call last):\n  File \"<img src=x onerror=alert(1)>\", line 1\n"
                "RuntimeError: CUDA error: an illegal memory access [link](javascript:x) *bold*\n")
    assert main(["report", str(log), "--format", "md"]) == 2
    md = capsys.readouterr().out
    assert md.startswith("## trainwatch report")
    assert "**CRITICAL loss.diverging** (step 25" in md
    assert "1. Lower the peak LR" in md
    assert "<img" not in md
    assert "[link](" not in md and r"\[link\](javascript:x) \*bold\*" in md  # shown, not a link


# ---- comparison ----

def test_compare_says_what_the_fixed_run_no_longer_does(tmp_path: Path) -> None:
    before, after = blowup_log(tmp_path), healthy_log(tmp_path)
    out = tmp_path / "compare.html"
    main(["report", str(before), str(after), "-o", str(out)])
    data = page_data(out.read_text())
    assert [r["label"] for r in data["runs"]] == ["before.log", "after.log"]
    assert "after.log: no loss is diverging (before.log: loss.diverging at step 25)" in data["diff"]
    assert "status: before.log critical, after.log ok" in data["diff"]
    assert any(d.startswith("loss at step 29: 292.5 (before.log) vs ") for d in data["diff"])


def test_compare_markdown_puts_the_difference_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["report", str(blowup_log(tmp_path)), str(healthy_log(tmp_path)), "--format", "md"])
    md = capsys.readouterr().out
    assert md.index("### Differences") < md.index("### before.log") < md.index("### after.log")


def test_align_by_a_metric_not_logged_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.html"
    code = main(["report", str(blowup_log(tmp_path)), str(healthy_log(tmp_path)), "--align", "epoch",
                 "-o", str(out)])
    assert code == 3 and not out.exists()
    assert "no epoch was logged" in capsys.readouterr().err


def test_align_by_epoch_puts_findings_on_the_epoch_axis(tmp_path: Path) -> None:
    lines = [f"Step {s}: loss={2.4 - s / 50:.4f}, lr=3e-4, grad_norm=1, epoch={s / 20:.3f}" for s in range(1, 41)]
    lines[29] = "Step 30: loss=nan, lr=3e-4, grad_norm=1, epoch=1.500"
    a = tmp_path / "a.log"
    a.write_text("\n".join(lines) + "\n")
    out = tmp_path / "c.html"
    b = tmp_path / "b.log"
    b.write_text("\n".join(ln.replace("loss=nan", "loss=1.8") for ln in lines) + "\n")
    main(["report", str(a), str(b), "--align", "epoch", "-o", str(out)])
    data = page_data(out.read_text())
    nan = next(f for f in data["runs"][0]["doc"]["findings"] if f["id"] == "loss.nonfinite")
    assert nan["at"] == pytest.approx(1.5)
    assert max(data["runs"][0]["charts"]["Loss"][0]["x"]) == pytest.approx(2.0)


def stamped_log(path: Path, seconds_per_step: int, nan_at: int | None = None) -> Path:
    """A log whose lines carry a wall-clock time, `seconds_per_step` apart."""
    import datetime

    t0 = datetime.datetime(2026, 11, 28, 10, 0, 0)
    lines = []
    for s in range(1, 41):
        t = t0 + datetime.timedelta(seconds=seconds_per_step * s)
        loss = "nan" if s == nan_at else f"{2.4 - s / 50:.4f}"
        lines.append(f"{t:%Y-%m-%d %H:%M:%S} - INFO - Step {s}: loss={loss}, lr=3e-4, grad_norm=1")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_align_by_time_draws_each_run_in_seconds_since_its_start(tmp_path: Path) -> None:
    slow = stamped_log(tmp_path / "slow.log", 10, nan_at=30)
    fast = stamped_log(tmp_path / "fast.log", 5)
    out = tmp_path / "c.html"
    main(["report", str(slow), str(fast), "--align", "time", "-o", str(out)])
    data = page_data(out.read_text())
    assert data["align"] == "time"
    xs = [r["charts"]["Loss"][0]["x"] for r in data["runs"]]
    assert (xs[0][0], xs[0][1], max(xs[0])) == (0.0, 10.0, 390.0)  # 40 steps 10 s apart
    assert (xs[1][0], xs[1][1], max(xs[1])) == (0.0, 5.0, 195.0)
    nan = next(f for f in data["runs"][0]["doc"]["findings"] if f["id"] == "loss.nonfinite")
    assert nan["at"] == pytest.approx(290.0)  # step 30, 290 s after step 1


def test_align_by_time_without_times_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.html"
    code = main(["report", str(stamped_log(tmp_path / "a.log", 10)), str(healthy_log(tmp_path)), "--align", "time",
                 "-o", str(out)])
    assert code == 3 and not out.exists()
    err = capsys.readouterr().err
    assert "after.log: no time was logged" in err and err.count("\n") == 1


# ---- bad input: one line, exit 3, no file ----

def test_unreadable_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "missing.log"), "-o", str(out)]) == 3
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.startswith("trainwatch: error:") and err.count("\n") == 1


def test_unwritable_output_is_one_line_and_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["report", str(blowup_log(tmp_path)), "-o", str(tmp_path / "no" / "such" / "r.html")])
    assert code == 3
    err = capsys.readouterr().err
    assert "cannot write the report there" in err and err.count("\n") == 1


def test_runs_with_nothing_in_common_cannot_be_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.log"
    other.write_text("\n".join(f"Step {s}: accuracy={s / 100:.2f}" for s in range(1, 30)) + "\n")
    out = tmp_path / "c.html"
    assert main(["report", str(blowup_log(tmp_path)), str(other), "-o", str(out)]) == 3
    assert "no metric in common" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".c.html.*"))


def test_html_needs_an_output_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(EXAMPLES / "hf_healthy.log"), "--format", "html"]) == 3
    assert "needs -o FILE" in capsys.readouterr().err


# ---- trainwatch run --report ----

CHILD = ("import sys\nfor s in range(1, 31): print(f'Step {s}: loss={2.4 - s / 50:.3f}, lr=3e-4, grad_norm=1', "
         "flush=True)\nsys.exit(3)")


def test_run_writes_the_report_with_the_childs_end(tmp_path: Path) -> None:
    log, page = tmp_path / "train.log", tmp_path / "r.html"
    r = subprocess.run([sys.executable, "-m", "trainwatch", "run", "--headless", "--no-gpu", "--log", str(log),
                        "--report", str(page), "--", sys.executable, "-c", CHILD],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert r.returncode == 3, r.stderr  # the child's own failure code
    data = page_data(page.read_text())
    ids = [f["id"] for f in data["runs"][0]["doc"]["findings"]]
    assert "run.child_exit" in ids  # only the parent knew it: fed after the log was judged
    assert len(data["runs"][0]["charts"]["Loss"][0]["y"]) == 30


def test_run_with_an_unwritable_report_starts_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "train.log"
    code = main(["run", "--headless", "--log", str(log), "--report", str(tmp_path / "no" / "r.html"), "--",
                 sys.executable, "-c", "print('never')"])
    assert code == 3 and not log.exists()
    assert "cannot write the report there" in capsys.readouterr().err


def test_rank_suffixes_are_overlaid_on_their_metrics_chart() -> None:
    from trainwatch.report.data import _rank, group_of

    assert [_rank(n) for n in ("loss_rank3", "rank1/loss", "loss[rank 2]", "loss", "grank")] == [3, 1, 2, None, None]
    assert group_of("loss_rank3") == "Loss" and group_of("epoch") is None


def test_a_folder_whose_runs_share_nothing_is_still_reported(tmp_path: Path) -> None:
    """One path named (a run folder): a console log with no metric beside a metrics file is no
    comparison error; the exit code is check's for the folder."""
    folder = ROOT / "examples" / "runs" / "lightning_tiny"
    out = tmp_path / "r.html"
    assert main(["report", str(folder), "-o", str(out)]) == main(["check", str(folder)])
    assert len(page_data(out.read_text())["runs"]) == 2


def test_a_wide_log_gets_fewer_columns_per_curve_within_the_budget(tmp_path: Path) -> None:
    """300 metrics over 5000 steps: the page's points stay within the budget, and each curve's spike stays."""
    from trainwatch.report.data import POINT_BUDGET

    log = tmp_path / "wide.jsonl"
    with log.open("w") as f:
        for s in range(1, 5001):
            row = {"step": s, "loss": 2 - s / 5000, **{f"m{i}": (50.0 if s == 2500 + i else 1.0) for i in range(300)}}
            f.write(json.dumps(row) + "\n")
    out = tmp_path / "r.html"
    main(["report", str(log), "-o", str(out)])
    curves = [c for cs in page_data(out.read_text())["runs"][0]["charts"].values() for c in cs]
    assert len(curves) == 301
    assert sum(len(c["y"]) for c in curves) <= POINT_BUDGET
    assert all(max(v for v in c["y"] if v is not None) == 50.0 for c in curves if c["name"].startswith("m"))
    assert out.stat().st_size < 3_000_000


def test_one_file_per_rank_is_overlaid_as_ranks(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    main(["report", str(ROOT / "examples" / "runs" / "ddp_rank_failure"), "-o", str(out)])
    loss = page_data(out.read_text())["runs"][0]["charts"]["Loss"]
    ranks = {c["name"]: c["rank"] for c in loss}
    assert ranks["loss (rank0.log)"] == 0 and ranks["loss (rank1.log)"] == 1


def test_a_step_plan_below_the_step_shown_is_a_later_launchs_not_this_steps_total() -> None:
    plan = {"value": 100, "unit": "step", "line": 900, "reached": None}
    assert _plan_text(plan, 40) == " of 100 (planned)"
    assert _plan_text(plan, 219) == ", a later launch planned 100 steps (line 900)"  # never "219 of 100"
