"""Detection picks the right adapter for each shape; every adapter's example parses; real logs work."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainwatch.adapters import detect, registry
from trainwatch.adapters.path_reader import reads_path
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.model import EventKind, Sample
from trainwatch.sources.files import iter_lines, read_sample

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

EXPECTED = {
    "hf_console_v4.log": "hf_console",
    "hf_console_v5_grpo.log": "hf_console",
    "run/trainer_state.json": "trainer_state",
    "metrics.jsonl": "jsonl",
    "metrics.csv": "csv",
    "megatron.log": "megatron",
    "olmo.log": "keyvalue",
    "keras.txt": "keyvalue",
    "custom.log": "keyvalue",
    "nanogpt.log": "keyvalue",
    "verl.log": "keyvalue",
}


def head_of(path: Path) -> str:
    """What detection scores: the sample of the whole file that `check` and `tail` read."""
    return read_sample(path).decode("utf-8", "replace")


def parse_file(path: Path, fmt: str) -> list:  # type: ignore[type-arg]
    parser = SourceParser(registry()[fmt](str(path)))
    if parser.adapter.whole_file:
        out = parser.document(path.read_text(encoding="utf-8", errors="replace"))
    else:
        out = []
        with open(path, "rb") as f:
            for n, line in iter_lines(f):
                out.extend(parser.feed(line, n))
    out.extend(parser.finish())
    assert parser.errors == 0
    return out


@pytest.mark.parametrize(("name", "fmt"), sorted(EXPECTED.items()))
def test_detects_and_parses_each_fixture(name: str, fmt: str) -> None:
    path = DATA / name
    assert detect(head_of(path), str(path)) == fmt
    recs = parse_file(path, fmt)
    assert len([r for r in recs if isinstance(r, Sample)]) >= 5


def test_prose_is_detected_as_nothing() -> None:
    prose = "\n".join(["This is a README about training.", "It has no metrics at all, only words.",
                       "Some errors are mentioned: there is an error in step three."] * 10)
    assert detect(prose, "README.txt") is None


def test_one_dict_of_settings_does_not_make_a_console_log_the_trainers() -> None:
    """An optimiser's settings printed once as a dict, then epoch lines: the key-value reader's log."""
    head = "\n".join(["Args in experiment:", "{'learning_rate': 0.0001, 'momentum': 0.9, 'e_layers': 3}"]
                     + [f"Epoch: {e}, Steps: 4 | Train Loss: 1.{e} Vali Loss: 2.{e} Test Loss: 1.{e}"
                        for e in range(1, 9)]) + "\n"
    assert detect(head, "run.log") == "keyvalue"


def test_json_dicts_after_logger_tags_are_read_though_key_value_lines_surround_them(tmp_path: Path) -> None:
    """fairseq under hydra: `[time][train_inner][INFO] - {"epoch": 1, "loss": "9.276", ...}` (values in quotes)
    after a long preamble, with `setting loss scale to: 64` notes the key-value reader reads: the dicts are the
    records, so the reader that reads them claims the log, and the loss, LR and gradient norm are read."""
    stamp = "[2022-01-01 10:00:00,000]"
    lines = [f"{stamp}[cli.train][INFO] - {{'_name': None, 'common': {{'log_interval': 200, 'seed': 1}}}}"]
    lines += [f"  (layer{i}): Linear(in_features=512, out_features=512, bias=True)" for i in range(40)]
    for k in range(1, 9):
        lines.append(f"{stamp}[trainer][INFO] - NOTE: gradient overflow detected, ignoring gradient, "
                     f"setting loss scale to: {2 ** (8 - k)}")
        lines.append(f'{stamp}[train_inner][INFO] - {{"epoch": 1, "loss": "{9 - k / 2:.3f}", "accuracy": "0.0{k}", '
                     f'"num_updates": "{200 * k}", "lr": "{k * 3.1e-6:.4g}", "gnorm": "1.{k}", "wall": "{k * 400}"}}')
    lines.append(f'{stamp}[valid][INFO] - {{"epoch": 1, "valid_loss": "6.389", "valid_accuracy": "0.026", '
                 f'"valid_num_updates": "1600"}}')
    path = tmp_path / "hydra_train.log"
    path.write_text("\n".join(lines) + "\n")
    fmt = detect(head_of(path), str(path))
    assert fmt == "template"
    got = {(r.name, r.step) for r in parse_file(path, fmt) if isinstance(r, Sample)}
    assert {("loss", 1600), ("lr", 1600), ("gnorm", 1600), ("valid_loss", 1600)} <= got


def test_killed_run_last_partial_line_and_traceback_are_read() -> None:
    recs = parse_file(DATA / "hf_console_v5_grpo.log", "hf_console")
    assert [r.signature for r in recs if getattr(r, "kind", None) == EventKind.ERROR] == ["oom.cuda"]
    tb = [r for r in recs if getattr(r, "kind", None) == EventKind.TRACEBACK]
    assert len(tb) == 1 and tb[0].fields["exception"] == "OutOfMemoryError"


def test_a_run_that_crashed_after_its_first_record_is_read_for_that_record() -> None:
    """One metric line, then the traceback of a crash at the first step: the traceback's lines are the crash's,
    not lines of another format, so the one record is enough to know the format; with no crash it is not."""
    record = "step 0: train loss 12.6510 BPC, val loss 12.6486 BPC"
    frames = [f'  File "/srv/lib/torch/module{i}.py", line {100 + i}, in _call_impl\n    return fn(*args)'
              for i in range(20)]
    crash = "\n".join(["", record, "Traceback (most recent call last):", *frames,
                        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 48.00 MiB.", ""])
    assert detect(crash, "output.log") == "keyvalue"
    quiet = "\n".join(["", record, "Loading data from disk", "model has 3 layers", ""])
    assert detect(quiet, "output.log") != "keyvalue"


OURS = {"hf_console", "trainer_state", "jsonl", "keyvalue", "megatron", "csv"}


# event files and run folders have no example line: tests/test_run_folders.py writes them for real
@pytest.mark.parametrize("name", sorted(n for n, c in registry().items() if not reads_path(c)))
def test_every_adapters_example_parses(name: str) -> None:
    cls = registry()[name]
    assert cls.description and cls.example
    parser = SourceParser(cls(""))
    if cls.whole_file:
        recs = parser.document(cls.example)
    else:
        recs = [r for n, line in enumerate(cls.example.split("\n"), 1) for r in parser.feed(line, n)]
    recs += parser.finish()
    assert recs and parser.errors == 0
    if name in OURS:  # metric formats: the example shows metrics (an errors-only format may show an error)
        assert any(isinstance(r, Sample) for r in recs)
        assert cls.score(cls.example + "\n", "example.log") > 0 or cls.whole_file


def _real_logs() -> list[tuple[Path, str]]:
    """The real logs other engineers produced with real trainers, when present."""
    out = []
    for p in sorted((EXAMPLES / "logs").glob("*")):
        if p.suffix == ".jsonl":
            out.append((p, "jsonl"))
        elif p.suffix == ".log":
            first = p.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
            out.append((p, "keyvalue" if "framework=torch" in first else "hf_console"))
    for p in sorted((EXAMPLES / "runs").glob("*/run.log")):
        if (p.parent / "trainer_state.json").exists():  # a Trainer run (Lightning runs leave metrics.csv)
            out.append((p, "hf_console"))
    for p in sorted((EXAMPLES / "runs").glob("*/metrics.csv")):
        out.append((p, "csv"))
    for p in sorted((EXAMPLES / "runs").glob("*/trainer_state.json")):
        out.append((p, "trainer_state"))
    return out


@pytest.mark.skipif(not _real_logs(), reason="no example logs yet")
@pytest.mark.parametrize(("path", "fmt"), _real_logs(), ids=lambda v: str(v).rsplit("examples/", 1)[-1])
def test_real_example_logs(path: Path, fmt: str) -> None:
    assert detect(head_of(path), str(path)) == fmt
    recs = parse_file(path, fmt)
    losses = [r for r in recs if isinstance(r, Sample) and r.name in ("loss", "train/loss", "train_loss")]
    assert losses
    steps = [s.step for s in losses]
    assert all(s is not None for s in steps)
    assert steps == sorted(steps) or "resume" in path.name or "resume" in path.parent.name


def test_console_steps_match_trainer_state_in_real_runs() -> None:
    """Where a real run left both files, the console's inferred steps are the state's steps."""
    import json

    pairs = [(p, p.parent / "trainer_state.json") for p in sorted((EXAMPLES / "runs").glob("*/run.log"))
             if (p.parent / "trainer_state.json").exists() and "resume" not in p.parent.name]
    if not pairs:
        pytest.skip("no example runs yet")
    for log, state in pairs:
        truth = [e["step"] for e in json.loads(state.read_text())["log_history"] if "loss" in e]
        got = [r.step for r in parse_file(log, "hf_console") if isinstance(r, Sample) and r.name == "loss"]
        assert got == truth, log


CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
LATE_METRICS = {  # real logs whose first metric line comes after 100-400 KB of banners and argument dumps
    "swift-gemma4-zero2-oom-step3.log": "hf_console",
    "swift-gemma4-fsdp2-full-epoch.log": "hf_console",
    "megatron-ds-ckpt-save-disk-full.log": "megatron",
    "megatron-ds-qwen7b-pretrain-500it.log": "megatron",
}


@pytest.mark.parametrize(("name", "fmt"), sorted(LATE_METRICS.items()))
def test_metrics_that_start_late_in_real_logs_are_detected(name: str, fmt: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} not present (the shared corpus is not checked out beside the project)")
    assert detect(head_of(path), str(path)) == fmt
