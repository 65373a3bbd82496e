"""Run folders of the tracking libraries, written by the libraries themselves in tiny runs of our own.

TensorBoard event files come from tensorboard's own EventFileWriter (no TensorFlow, no torch); the MLflow
file store is written by mlflow's own client (mlflow-skinny, `log_metric` into a `file:` tracking URI),
and read by trainwatch without mlflow; the W&B offline run is made by the wandb SDK in offline mode, its
history read with and without the SDK.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import wait_until
from trainwatch.live.watcher import Watcher

tb = pytest.importorskip("tensorboard", reason="tensorboard is in the test extra: pip install -e '.[test]'")
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2  # noqa: E402
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: E402

WALL = 1_700_000_000.0


def _scalar_value(tag: str, value: float, *, tensor: bool) -> Any:
    if not tensor:  # TF1 / torch's SummaryWriter: simple_value
        return summary_pb2.Summary.Value(tag=tag, simple_value=value)
    proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[value],
                                   tensor_shape=tensor_shape_pb2.TensorShapeProto())
    meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    return summary_pb2.Summary.Value(tag=tag, tensor=proto, metadata=meta)  # TF2's tf.summary.scalar


def write_scalars(writer: EventFileWriter, rows: list[tuple[int, dict[str, float]]], *, tensor: bool = False) -> None:
    for step, values in rows:
        summary = summary_pb2.Summary(value=[_scalar_value(k, v, tensor=tensor) for k, v in values.items()])
        writer.add_event(event_pb2.Event(wall_time=WALL + step, step=step, summary=summary))
    writer.flush()


def check(*args: str, cwd: Path | None = None, pre: str = "") -> subprocess.CompletedProcess[str]:
    """`trainwatch check` in a child process, as a user runs it (pre: Python run first, to hide a package)."""
    code = f"{pre}\nimport sys\nfrom trainwatch.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "check", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def findings(out: str) -> dict[str, Any]:
    return {f["id"]: f for f in json.loads(out)["findings"]}


def healthy_then_nan(nan_at: int) -> list[tuple[int, dict[str, float]]]:
    return [(s, {"train/loss": 2.0 - 0.01 * s if s < nan_at else math.nan, "train/learning_rate": 1e-4})
            for s in range(1, nan_at + 1)]


@pytest.mark.parametrize("tensor", [False, True], ids=["simple_value", "tf2_tensor"])
def test_tensorboard_nan_found_at_its_step(tmp_path: Path, tensor: bool) -> None:
    writer = EventFileWriter(str(tmp_path / "logs" / "train"))
    write_scalars(writer, healthy_then_nan(37), tensor=tensor)
    writer.close()
    res = check(str(tmp_path / "logs"), "--json")
    assert res.returncode == 2, res.stderr
    nan = findings(res.stdout)["loss.nonfinite"]
    assert nan["step"] == 37
    assert json.loads(res.stdout)["sources"][0]["format"] == "tensorboard"


def test_tensorboard_divergence_found(tmp_path: Path) -> None:
    rows = [(s, {"loss": 2.0 - 0.005 * s}) for s in range(1, 201)]
    rows += [(s, {"loss": 1.0 * 1.08 ** (s - 200)}) for s in range(201, 261)]  # blows up without a NaN
    writer = EventFileWriter(str(tmp_path))
    write_scalars(writer, rows, tensor=True)
    writer.close()
    res = check(str(tmp_path), "--json")
    found = findings(res.stdout)
    assert res.returncode >= 1, res.stdout
    assert any(rule.startswith("loss.") and rule != "loss.nonfinite" for rule in found), sorted(found)
    assert all(f["step"] is None or f["step"] > 200 for r, f in found.items() if r.startswith("loss.")), found


def test_malformed_event_file_one_line_exit_3(tmp_path: Path) -> None:
    bad = tmp_path / "events.out.tfevents.1700000000.node.1.0"
    bad.write_bytes(b"this was never a TFRecord stream " * 8)
    res = check(str(bad))
    assert res.returncode == 3
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1 and "malformed TensorBoard event file" in res.stderr, res.stderr


def test_malformed_event_file_beside_a_good_run_stops_nothing(tmp_path: Path) -> None:
    (tmp_path / "events.out.tfevents.1700000000.node.1.0").write_bytes(b"\x00garbage\xff" * 20)
    writer = EventFileWriter(str(tmp_path / "ok"))
    write_scalars(writer, healthy_then_nan(12))
    writer.close()
    res = check(str(tmp_path), "--json")
    assert res.returncode == 2, res.stderr
    assert findings(res.stdout)["loss.nonfinite"]["step"] == 12
    notes = [n for s in json.loads(res.stdout)["sources"] for n in s["skipped"]]
    assert any("malformed TensorBoard event file" in n for n in notes), notes


def test_tail_of_a_folder_with_a_malformed_event_file_follows_the_rest(tmp_path: Path) -> None:
    bad = tmp_path / "events.out.tfevents.1700000000.node.1.0"
    bad.write_bytes(b"\x00garbage\xff" * 20)
    writer = EventFileWriter(str(tmp_path / "ok"))
    write_scalars(writer, healthy_then_nan(12))
    writer.close()
    w = Watcher([str(tmp_path)], gpu=False, poll=True, poll_interval=0.05)
    w.start()
    try:
        def nan_found() -> bool:
            with w.lock:
                return any(a.rule == "loss.nonfinite" for a in w.engine.alerts())

        wait_until(nan_found, what="the good run's NaN")
        said = [t for t in w.info_lines if "malformed TensorBoard event file" in t]
        assert len(said) == 1 and bad.name in said[0], w.info_lines
    finally:
        w.stop()


def test_without_tensorboard_one_line_naming_the_extra(tmp_path: Path) -> None:
    writer = EventFileWriter(str(tmp_path))
    write_scalars(writer, healthy_then_nan(5))
    writer.close()
    res = check(str(tmp_path), pre="import sys; sys.modules['tensorboard'] = None")
    assert res.returncode == 3
    assert res.stderr.count("\n") == 1 and "trainwatch[tensorboard]" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_tensorboard_followed_while_it_grows(tmp_path: Path) -> None:
    """Appended events are read incrementally, and a second event file (a restarted run) is picked up."""
    logdir = tmp_path / "tb"
    first = EventFileWriter(str(logdir))
    write_scalars(first, [(s, {"loss": 2.0}) for s in range(1, 4)])
    w = Watcher([str(logdir)], gpu=False, poll=True, poll_interval=0.05)
    fired: list[str] = []
    w.add_listener(lambda c: fired.append(c.alert.rule) if c.state.value == "firing" else None)
    w.start()
    try:
        [src] = w.sources()
        assert w.engine.sources[src.name].step == 3  # the backlog, before start() returns
        write_scalars(first, [(4, {"loss": 1.9})])
        wait_until(lambda: w.engine.sources[src.name].step == 4, what="step 4 appended to the event file")
        second = EventFileWriter(str(logdir), filename_suffix=".restart")
        write_scalars(second, [(5, {"loss": math.nan})])
        wait_until(lambda: "loss.nonfinite" in fired, what="the NaN from the new event file")
        assert len(w.sources()) == 2
        second.close()
    finally:
        first.close()
        w.stop()


MLFLOW_RUN = """
import json, os, sys
import mlflow
mlflow.set_tracking_uri("file:" + os.environ["MLRUNS"])
with mlflow.start_run(run_id=sys.argv[2] or None) as run:
    for name, points in json.loads(sys.argv[1]).items():
        for step, value in points:
            mlflow.log_metric(name, value, step=step)
print(run.info.run_id)
"""


def write_mlflow_run(root: Path, metrics: dict[str, list[tuple[int, float]]], run_id: str = "") -> Path:
    """A run logged by the mlflow client into a file store at `root` (a new run, or more of `run_id`), in a
    child process as a training script does it; returns the run folder <root>/<experiment id>/<run id>."""
    pytest.importorskip("mlflow", reason="mlflow-skinny is in the test extra: pip install -e '.[test]'")
    # MLflow 3 keeps the file store for those who ask for it; older versions take the variable as noise
    env = {**os.environ, "MLRUNS": str(root), "MLFLOW_ALLOW_FILE_STORE": "true"}
    done = subprocess.run([sys.executable, "-c", MLFLOW_RUN, json.dumps(metrics), run_id], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [run] = root.glob(f"*/{done.stdout.strip()}")
    return run


@pytest.mark.parametrize("given", ["mlruns", "run"])
def test_mlflow_file_store_nan(tmp_path: Path, given: str) -> None:
    points = [(s, 2.0 - 0.01 * s) for s in range(1, 30)] + [(30, math.nan)]
    run = write_mlflow_run(tmp_path / "mlruns", {"loss": points, "train/lr": [(s, 1e-4) for s in range(1, 31)]})
    res = check(str(tmp_path / "mlruns" if given == "mlruns" else run), "--json")
    assert res.returncode == 2, res.stderr
    assert findings(res.stdout)["loss.nonfinite"]["step"] == 30
    [source] = json.loads(res.stdout)["sources"]
    assert source["format"] == "mlflow"


def test_mlflow_followed_while_it_grows(tmp_path: Path) -> None:
    run = write_mlflow_run(tmp_path / "mlruns", {"loss": [(1, 2.0), (2, 1.9)]})
    w = Watcher([str(tmp_path / "mlruns")], gpu=False, poll=True, poll_interval=0.05)
    w.start()
    try:
        [src] = w.sources()
        assert w.engine.sources[src.name].step == 2
        write_mlflow_run(tmp_path / "mlruns", {"loss": [(3, 1.8)]}, run_id=run.name)  # the run logs on
        wait_until(lambda: w.engine.sources[src.name].step == 3, what="step 3 of the metric file")
        # a value caught half-written, which the client never leaves on purpose: written here by hand
        with open(run / "metrics" / "loss", "a") as f:
            f.write(f"{int(WALL * 1000) + 4} 1.7")
    finally:
        w.stop()
    assert w.engine.sources[src.name].step == 3  # the unfinished line is not read as a value


WANDB_RUN = """
import math, os, wandb
run = wandb.init(project="tiny", mode="offline", dir=os.environ["RUN_DIR"])
for step in range(1, 41):
    loss = 2.0 - 0.01 * step if step < 40 else math.nan
    print(f"Step {step}: loss={loss}, lr=1e-4", flush=True)
    run.log({"train/loss": loss, "train/learning_rate": 1e-4}, step=step)
run.finish()
"""


def offline_wandb_run(tmp_path: Path) -> Path:
    """A real offline run by the wandb SDK, in a child process (it starts its own service)."""
    pytest.importorskip("wandb", reason="wandb is in the test extra: pip install -e '.[test]'")
    env = {**os.environ, "RUN_DIR": str(tmp_path), "WANDB_MODE": "offline", "WANDB_SILENT": "true",
           "WANDB_DISABLE_GIT": "true", "WANDB_CONFIG_DIR": str(tmp_path / "config"),
           "WANDB_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", WANDB_RUN], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [run] = (tmp_path / "wandb").glob("offline-run-*")
    return run


def test_wandb_offline_run_history_and_console(tmp_path: Path) -> None:
    run = offline_wandb_run(tmp_path)
    res = check(str(tmp_path / "wandb"), "--json")
    assert res.returncode == 2, res.stderr
    doc = json.loads(res.stdout)
    formats = {Path(s["path"]).name: s["format"] for s in doc["sources"]}
    [history] = [name for name, fmt in formats.items() if fmt == "wandb_history"]
    assert history.endswith(".wandb")
    assert "output.log" in formats and formats["output.log"] != "text", formats  # the console adapters read it
    assert not any("debug" in name for name in formats), formats  # W&B's own logs are not training output
    nan = [f for f in doc["findings"] if f["id"] == "loss.nonfinite"]
    assert {Path(f["source"]).name for f in nan} == {history, "output.log"}
    assert all(f["step"] == 40 for f in nan), nan
    assert run.is_dir()


def test_wandb_history_without_the_sdk_is_named(tmp_path: Path) -> None:
    offline_wandb_run(tmp_path)
    res = check(str(tmp_path / "wandb"), pre="import sys; sys.modules['wandb'] = None")
    assert res.returncode == 2, res.stderr
    assert "history not read: install wandb" in res.stdout
    assert "loss.nonfinite" in res.stdout and "step 40" in res.stdout  # from files/output.log


def test_malformed_wandb_history_is_one_note(tmp_path: Path) -> None:
    pytest.importorskip("wandb", reason="wandb is in the test extra: pip install -e '.[test]'")
    run = tmp_path / "offline-run-20240101_000000-abc123"
    (run / "files").mkdir(parents=True)
    lines = [f"Step {s}: loss={2.0 - 0.01 * s}, lr=1e-4" for s in range(1, 9)] + ["Step 9: loss=nan, lr=1e-4"]
    (run / "files" / "output.log").write_text("\n".join(lines) + "\n")
    (run / "run-abc123.wandb").write_bytes(b"PK\x03\x04 not a transaction log" * 4)
    res = check(str(run), "--json")
    assert res.returncode == 2, res.stderr
    doc = json.loads(res.stdout)
    assert findings(res.stdout)["loss.nonfinite"]["step"] == 9
    notes = [n for s in doc["sources"] for n in s["skipped"]]
    assert any("malformed W&B history file" in n for n in notes), notes
