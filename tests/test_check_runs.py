"""`check DIR` judges each run on its own: its own task, preset and engine, so a log's findings never
depend on the logs beside it; a trainer_state.json is read when it sits alone, and folded into a console
log only when that log is the same run."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

from trainwatch.sources.same_run import runs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "runs"

# pretraining from scratch: the loss starts near ln(vocab) and grad-norm sits at 2-4, normal there
PRETRAIN = "".join(f"iteration {s}: loss={10.8 * math.exp(-s / 60) + 3.0:.4f}, lr=3e-4, "
                   f"grad_norm={2.5 + (s % 5) * 0.3:.2f}\n" for s in range(1, 121))
# an RL run beside it, whose preset (grad-norm healthy only up to 1.0) must not be applied to the other
RL = "".join(f"step {s}: loss={0.01 * (s % 3):.4f}, reward={0.2 + s / 200:.4f}, reward_std=0.31, kl={0.001 * s:.4f}, "
             f"grad_norm=0.{20 + s % 7}, completions/mean_length=200\n" for s in range(1, 121))


def check(*paths: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", *map(str, paths), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1, 2), proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _findings(doc: dict, source: Path) -> list[tuple[str, str, int | None, str]]:
    return [(f["id"], f["severity"], f["step"], f["message"]) for f in doc["findings"] if f["source"] == str(source)]


def test_a_logs_findings_never_depend_on_its_neighbours(tmp_path: Path) -> None:
    pre, rl = tmp_path / "pretrain.log", tmp_path / "rl.log"
    pre.write_text(PRETRAIN)
    rl.write_text(RL)
    alone_pre, alone_rl, both = check(pre), check(rl), check(tmp_path)
    assert alone_pre["preset"] != alone_rl["preset"]  # two tasks: the test means something
    presets = {s["path"]: s["preset"] for s in both["sources"]}
    assert presets == {str(pre): alone_pre["preset"], str(rl): alone_rl["preset"]}
    assert both["preset"] == "per run" and both["runs"] == 2
    assert _findings(both, pre) == _findings(alone_pre, pre)
    assert _findings(both, rl) == _findings(alone_rl, rl)
    assert not [f for f in _findings(both, pre) if f[0].startswith("grad.")]
    assert both["exit_code"] == max(alone_pre["exit_code"], alone_rl["exit_code"])
    text = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(tmp_path)], capture_output=True,
                          text=True, timeout=120).stdout
    assert "in 2 runs, each judged on its own" in text
    assert f"[keyvalue, preset {alone_pre['preset']}]" in text


def test_a_trainer_state_alone_in_a_folder_is_read(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "hf_high_lr" / "trainer_state.json", tmp_path / "run7-trainer_state.json")
    doc = check(tmp_path)
    assert [s["format"] for s in doc["sources"]] == ["trainer_state"]
    assert doc["exit_code"] == check(EXAMPLES / "hf_high_lr" / "trainer_state.json")["exit_code"] == 2


def test_a_trainer_state_is_folded_into_the_console_log_of_its_own_run_only(tmp_path: Path) -> None:
    same = tmp_path / "same"
    shutil.copytree(EXAMPLES / "hf_healthy", same)
    doc = check(same)
    assert [s["path"] for s in doc["sources"]] == [str(same / "run.log")]
    assert any("same run as" in note for s in doc["sources"] for note in s["skipped"])

    other = tmp_path / "other"  # a checkpoint of another run left in the folder of this one
    other.mkdir()
    shutil.copy(EXAMPLES / "hf_healthy" / "run.log", other / "run.log")
    (other / "checkpoint-40").mkdir()
    shutil.copy(EXAMPLES / "hf_high_lr" / "trainer_state.json", other / "checkpoint-40" / "trainer_state.json")
    doc = check(other)
    assert sorted(s["format"] for s in doc["sources"]) == ["hf_console", "trainer_state"]
    assert doc["runs"] == 2
    assert _findings(doc, other / "run.log") == _findings(check(other / "run.log"), other / "run.log")


def test_rank_files_and_their_launcher_are_one_job() -> None:
    class Src:
        def __init__(self, path: str) -> None:
            self.path, self.format = Path(path), "text"

    opened = [Src("job/rank0.log"), Src("job/rank1.log"), Src("job/torchrun.log"), Src("other/train.log"),
              Src("other/eval.log")]
    assert runs(opened) == [[0, 1, 2], [3], [4]]


def _without_clock(doc: dict) -> dict:
    """The document less what depends on the wall clock at the moment of the check."""
    text = json.dumps(doc, sort_keys=True)
    for key in ("generated", "quiet_s", "checked_at"):
        text = text.replace(key, "_")
    out = json.loads(text)
    for f in out["findings"]:
        f.pop("started_at", None)
        f.pop("resolved_at", None)
    return out


def test_runs_judged_in_parallel_say_what_one_process_says(tmp_path: Path) -> None:
    logs = Path(__file__).resolve().parents[1] / "examples" / "logs"
    for name in ("hf_high_lr.log", "hf_healthy.log", "torch_bad_sample.log", "grpo_tiny.log"):
        shutil.copy(logs / name, tmp_path / name)
    (tmp_path / "notes.log").write_text("nothing a trainer printed\n" * 3)  # skipped, with its note

    def run(jobs: str) -> tuple[int, dict]:
        proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(tmp_path), "--json", "-j", jobs],
                              capture_output=True, text=True, timeout=120)
        return proc.returncode, json.loads(proc.stdout)

    code1, one = run("1")
    code2, two = run("2")
    assert one["runs"] == 4 and code1 == 2
    assert code2 == code1
    assert [f["id"] for f in two["findings"]] == [f["id"] for f in one["findings"]]
    assert [f["message"] for f in two["findings"]] == [f["message"] for f in one["findings"]]
    assert [s["path"] for s in two["sources"]] == [s["path"] for s in one["sources"]]
    assert two["sources"][0]["skipped"] == one["sources"][0]["skipped"]


def test_a_named_file_nothing_understood_in_is_one_error_line_in_parallel_too(tmp_path: Path) -> None:
    logs = Path(__file__).resolve().parents[1] / "examples" / "logs"
    shutil.copy(logs / "hf_healthy.log", tmp_path / "a.log")
    bad = tmp_path / "b.log"
    bad.write_text('{"loss": "not a number"}\n' * 20)
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(tmp_path / "a.log"), str(bad),
                           "--format", "jsonl", "-j", "2"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
