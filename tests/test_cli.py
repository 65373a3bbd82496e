"""The command line as a user meets it: exit codes, one-line errors, never a traceback."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HEALTHY = "".join(f"Step {s}: loss={3.0 * 0.97 ** (s / 10):.4f}, lr={1e-4:.2e}, grad_norm=1.{s % 7}\n"
                  for s in range(10, 410, 10))


def tw(*args: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "trainwatch", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, input=stdin, timeout=120)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("trainwatch: error: ")
    return lines[0]


@pytest.fixture()
def healthy(tmp_path: Path) -> Path:
    p = tmp_path / "run.log"
    p.write_text(HEALTHY)
    return p


def test_healthy_log_exits_zero(healthy: Path) -> None:
    proc = tw("check", str(healthy))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "keyvalue" in proc.stdout
    assert "Status: OK" in proc.stdout


def test_a_log_of_only_a_validation_error_per_epoch_is_judged_not_unknown(tmp_path: Path) -> None:
    """An MAE/RMSE is lower-is-better: a log that holds only it says how training went (not exit 3), and a
    minimum followed by a small rise is no critical drop in quality."""
    p = tmp_path / "log.txt"
    p.write_text("".join(f"Epoch {e}: Val RMSE = {0.03 - 0.01 * min(e, 10) / 10 + 0.0002 * max(0, e - 10):.6f}\n"
                         for e in range(40)))
    proc = tw("check", str(p), "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert doc["counts"]["critical"] == 0
    assert doc["sources"][0]["metrics"]["Val RMSE"]["count"] == 40


def test_nan_loss_is_critical_with_step_and_line(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text(HEALTHY + "Step 410: loss=nan, lr=1.00e-04, grad_norm=1.2\n")
    proc = tw("check", str(p), "--json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["status"] == "critical" and doc["exit_code"] == 2
    first = doc["findings"][0]
    assert first["id"] == "loss.nonfinite"
    assert first["severity"] == "critical" and first["step"] == 410 and first["line"] == 41
    assert first["fixes"], "a finding always comes with fixes"
    src = doc["sources"][0]
    assert src["format"] == "keyvalue" and src["metrics"]["loss"]["nan"] == 1


def test_json_document_fields_are_stable(healthy: Path) -> None:
    doc = json.loads(tw("check", str(healthy), "--json").stdout)
    assert set(doc) >= {"schema", "status", "exit_code", "preset", "preset_auto", "sources", "counts", "findings"}
    assert set(doc["sources"][0]) >= {"path", "format", "lines", "records", "last_step", "total_steps", "ended",
                                      "metrics"}
    assert doc["sources"][0]["metrics"]["loss"]["last_step"] == 400


def test_missing_path(tmp_path: Path) -> None:
    assert "no such file" in one_line_error(tw("check", str(tmp_path / "nope.log")))


def test_directory_without_logs(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"\x00" * 10)
    assert "no log" in one_line_error(tw("check", str(tmp_path)))


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.log"
    p.write_text("")
    line = one_line_error(tw("check", str(p)))
    assert "empty.log" in line and "empty" in line


def test_binary_garbage(tmp_path: Path) -> None:
    p = tmp_path / "garbage.log"
    p.write_bytes(bytes(range(256)) * 200)
    line = one_line_error(tw("check", str(p)))
    assert "garbage.log" in line


def test_prose_is_not_a_format(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("Dear diary,\nToday the model did not train at all and I went home.\n" * 20)
    assert "no known log format" in one_line_error(tw("check", str(p)))


def test_invalid_utf8_is_read(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_bytes(HEALTHY.encode() + b"\xff\xfe garbage \xc3\x28\n" + b"Step 410: loss=1.0, lr=1e-4, grad_norm=1.0\n")
    proc = tw("check", str(p), "--json")
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["sources"][0]["last_step"] == 410


def test_truncated_last_line_is_read(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text(HEALTHY + "Step 410: loss=nan, lr=1e-4")  # killed mid-line, no newline
    proc = tw("check", str(p), "--json")
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["findings"][0]["step"] == 410


def test_huge_single_line(tmp_path: Path) -> None:
    p = tmp_path / "huge.log"
    p.write_text(HEALTHY + "x" * (10 << 20) + "\n" + "Step 410: loss=1.0, lr=1e-4, grad_norm=1.0\n")
    proc = tw("check", str(p), "--json")
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["sources"][0]["last_step"] == 410
    assert doc["sources"][0]["lines"] == 42


def test_unknown_preset_and_format(healthy: Path) -> None:
    assert "unknown preset 'nope'" in one_line_error(tw("check", str(healthy), "--preset", "nope"))
    assert "unknown format 'nope'" in one_line_error(tw("check", str(healthy), "--format", "nope"))


def test_usage_errors_exit_3_not_2(healthy: Path) -> None:
    one_line_error(tw("check"))
    one_line_error(tw("check", str(healthy), "--no-such-flag"))
    one_line_error(tw("frobnicate"))


def test_malformed_yaml_config(healthy: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("rules:\n  loss.spike: {factor: [1, 2\n")
    line = one_line_error(tw("check", str(healthy), "--config", str(cfg)))
    assert "bad.yaml" in line and "YAML" in line


def test_wrong_typed_yaml_config_names_the_key(healthy: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "typed.yaml"
    cfg.write_text("rules:\n  loss.nonfinite:\n    severity: [critical]\n")
    line = one_line_error(tw("check", str(healthy), "--config", str(cfg)))
    assert "typed.yaml" in line and "rules.loss.nonfinite.severity" in line


def test_unknown_rule_in_config(healthy: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rules:\n  no.such.rule: {enabled: false}\n")
    line = one_line_error(tw("check", str(healthy), "--config", str(cfg)))
    assert "rules.no.such.rule" in line and "unknown rule" in line


@pytest.mark.parametrize("body, said", [
    # a typo in a parameter's name
    ("loss.spike: {ratoi: 3}", "rules.loss.spike.ratoi: unknown key (did you mean 'ratio'?"),
    # a value of the wrong type: a string for a number, a string for a list of strings
    ("loss.spike: {ratio: high}", "rules.loss.spike.ratio: expected a number, got 'high'"),
    ("run.ended_early: {not_fatal: fp16.overflow}",
     "rules.run.ended_early.not_fatal: expected a list of strings, got 'fp16.overflow'"),
    # a parameter left without its value
    ("loss.spike: {window: }", "rules.loss.spike.window: missing value (expected a whole number)"),
])
def test_a_bad_rule_parameter_is_one_line_naming_file_rule_and_parameter(healthy: Path, tmp_path: Path,
                                                                         body: str, said: str) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(f"rules:\n  {body}\n")
    line = one_line_error(tw("check", "--config", str(cfg), str(healthy)))
    assert line.startswith(f"trainwatch: error: {cfg}: {said}"), line


def test_config_disables_a_rule(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text(HEALTHY + "Step 410: loss=nan, lr=1.00e-04, grad_norm=1.2\n")
    cfg = tmp_path / "off.yaml"
    cfg.write_text("rules:\n  loss.nonfinite: {enabled: false}\n")
    doc = json.loads(tw("check", str(p), "--json", "--config", str(cfg)).stdout)
    assert "loss.nonfinite" not in {f["id"] for f in doc["findings"]}


def test_local_trainwatch_yaml_is_read(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text(HEALTHY)
    (tmp_path / "trainwatch.yaml").write_text(
        "rules:\n  my.lr_cap:\n    metric: lr\n    above: 1.0e-5\n    severity: critical\n    family: loss\n")
    proc = tw("check", "run.log", "--json", cwd=tmp_path)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["findings"][0]["id"] == "my.lr_cap"


def test_formats_lists_every_adapter_with_an_example() -> None:
    proc = tw("formats")
    assert proc.returncode == 0
    for name in ("hf_console", "trainer_state", "jsonl", "keyvalue", "megatron", "csv"):
        assert name in proc.stdout


def test_formats_detect(healthy: Path) -> None:
    proc = tw("formats", "--detect", str(healthy))
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0].endswith(": keyvalue")


def test_rules_shows_thresholds_in_force(tmp_path: Path) -> None:
    base = json.loads(tw("rules", "--json").stdout)
    assert base["preset"] == "sft"
    ids = {r["id"] for r in base["rules"]}
    assert {"loss.nonfinite", "loss.spike", "grad.spike"} <= ids
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rules:\n  loss.nonfinite: {severity: warning}\n")
    over = json.loads(tw("rules", "--json", "--config", str(cfg)).stdout)
    assert next(r for r in over["rules"] if r["id"] == "loss.nonfinite")["severity"] == "warning"
    grpo = json.loads(tw("rules", "--preset", "grpo", "--json").stdout)
    assert grpo["preset"] == "grpo"


def test_rules_prints_parameters_in_declared_order_with_their_types() -> None:
    from trainwatch.rules.loss import LossSpikeParams

    order = [f.name for f in dataclasses.fields(LossSpikeParams)]
    doc = json.loads(tw("rules", "--json", "--all").stdout)
    by_id = {r["id"]: r for r in doc["rules"]}
    spike = by_id["loss.spike"]
    assert list(spike["param_types"]) == order
    assert [k for k in spike if k in order] == order
    assert spike["param_types"]["window"] == "int" and spike["param_types"]["ratio"] == "float"
    assert by_id["run.ended_early"]["param_types"]["not_fatal"] == "list[str]"
    assert isinstance(by_id["run.ended_early"]["not_fatal"], list)
    assert "param_types" not in by_id["error.traceback"]  # a rule without parameters
    text = tw("rules").stdout.splitlines()
    shown = text[text.index(next(t for t in text if t.startswith("loss.spike "))) + 1]
    assert [kv.split("=")[0] for kv in shown.strip().split(", ") if not kv.startswith("keep_firing_for")] == order


def test_log_text_cannot_inject_escapes(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text(HEALTHY + "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                 "RuntimeError: boom \x1b[2J\x1b]8;;http://x\x07link\x1b]8;;\x07 [bold]red[/bold]\n")
    proc = tw("check", str(p))
    assert "\x1b" not in proc.stdout
    assert proc.returncode == 2


def test_a_log_with_progress_but_no_loss_is_not_called_healthy(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """LLaMA-Factory writes progress-only trainer_log.jsonl rows when the loss is not logged."""
    import subprocess
    import sys

    log = tmp_path / "trainer_log.jsonl"
    log.write_text("".join(f'{{"current_steps": {s}, "total_steps": 50, "percentage": {2 * s}.0}}\n'
                           for s in range(5, 55, 5)))
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(log)], capture_output=True, text=True)
    assert "no loss was read" in proc.stdout and "looks healthy" not in proc.stdout
    assert proc.returncode == 3 and "Status: UNKNOWN" in proc.stdout  # nothing was judged: unknown, not ok


def json_error(proc: subprocess.CompletedProcess[str], code: int = 3) -> str:
    """With --json an error is one JSON object on stdout, never text a parser would choke on."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and not proc.stderr.strip(), proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"error", "exit_code"} and doc["exit_code"] == code, doc
    return str(doc["error"])


def test_forced_wrong_format_reads_nothing_and_says_so(tmp_path: Path) -> None:
    hf = Path(__file__).resolve().parents[1] / "examples" / "logs" / "hf_healthy.log"
    line = one_line_error(tw("check", str(hf), "--format", "jsonl"))
    assert "read as jsonl, but nothing in it was understood" in line and "--format NAME" in line
    error = json_error(tw("check", str(hf), "--format", "jsonl", "--json"))
    assert "read as jsonl, but nothing in it was understood" in error


def test_json_errors_are_json_for_every_command_that_takes_json(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.log")
    assert "no such file" in json_error(tw("check", missing, "--json"))
    assert "unrecognized arguments: --bogus" in json_error(tw("check", missing, "--json", "--bogus"))
    assert "unknown format" in json_error(tw("tail", missing, "--headless", "--json", "--format", "nope"))
    assert "unknown preset" in json_error(tw("rules", "--json", "--preset", "nope"))
    assert "no such file" in json_error(tw("run", "--json", "--no-gpu", "--log", str(tmp_path / "r.log"), "--",
                                           str(tmp_path / "no-such-trainer")), 127)
    # the training command's own --json is not trainwatch's: its error stays a line
    one_line_error(tw("run", "--bogus", "--", "train", "--json"))
    gpus = tw("gpus", "--json", "--replay", str(tmp_path / "missing.jsonl"))
    if gpus.returncode == 3:  # no readings: an error object, with the readings' keys
        doc = json.loads(gpus.stdout)
        assert doc["exit_code"] == 3 and doc["error"] and doc["gpus"] == []


def test_usage_errors_name_the_command_once_and_its_help(healthy: Path) -> None:
    line = one_line_error(tw("check", str(healthy), "--bogus"))
    assert line == "trainwatch: error: check: unrecognized arguments: --bogus (see 'trainwatch check --help')"
    line = one_line_error(tw("tail", "x.log", "--exit-on", "bad"))
    assert line.startswith("trainwatch: error: tail: argument --exit-on: unknown severity 'bad'")
    assert line.count("trainwatch") == 2 and line.endswith("(see 'trainwatch tail --help')")
    assert one_line_error(tw("--bogus")).endswith("(see 'trainwatch --help')")


def test_rules_output_is_the_same_on_every_run() -> None:
    """Parameters keep the presets' order: two processes with different hash seeds print the same."""
    def run(seed: str, *args: str) -> str:
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONWARNINGS="ignore")
        proc = subprocess.run([sys.executable, "-m", "trainwatch", "rules", *args], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    for args in (("--all",), ("--json", "--preset", "grpo")):
        assert run("1", *args) == run("2", *args)


def _no_terminal(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """The command with stdin from /dev/null and stdout into a file, as cron or `> out` run it."""
    out = tmp_path / "out.txt"
    with open(out, "w", encoding="utf-8") as f:
        proc = subprocess.run([sys.executable, "-m", "trainwatch", *args], stdin=subprocess.DEVNULL, stdout=f,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=120,
                              env=dict(os.environ, PYTHONWARNINGS="ignore", TERM="xterm-256color"))
    return proc, out.read_text(encoding="utf-8")


def test_tail_without_a_terminal_falls_back_to_headless_lines(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text(HEALTHY + "Step 420: loss=nan, lr=1e-4, grad_norm=1.0\n")
    proc, out = _no_terminal(["tail", "run.log", "--no-gpu", "--exit-on", "critical"], tmp_path)
    assert proc.returncode == 2, (out, proc.stderr)
    assert "\x1b" not in out and "CRITICAL" in out and "loss.nonfinite" in out
    assert proc.stderr.splitlines()[0] == ("trainwatch: no terminal on stdin and stdout: alerts are printed as "
                                           "lines (as with --headless)")


def test_demo_without_a_terminal_prints_lines(tmp_path: Path) -> None:
    proc, out = _no_terminal(["demo", "--interval", "0"], tmp_path)
    assert proc.returncode == 2, (out, proc.stderr)
    assert "\x1b" not in out and "CRITICAL" in out
    assert "no terminal on stdin and stdout" in proc.stderr
    assert_headless_format(out)


HEADLINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d (CRITICAL|WARNING |INFO    ) ([\w.]+) (\S+) step (\d+|-): "
                      r"(?P<title>[^:]+): (?P<message>.+)$")
FIX = re.compile(r"^    - .+$")
OTHER = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d (resolved|stopped) ([\w.]+) (\S+) step (\d+|-): .+$")


def assert_headless_format(out: str) -> None:
    """One line format for tail, run and demo: every alert line carries its rule's title."""
    from trainwatch import config

    titles = {spec.title for spec in config.load("sft").rules.values()}
    heads = [HEADLINE.match(line) for line in out.splitlines()]
    assert any(heads), out
    for line, m in zip(out.splitlines(), heads):
        assert m or FIX.match(line) or OTHER.match(line), line
        if m:
            assert m["title"] in titles, line


def test_tail_run_and_demo_print_the_same_line_format(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text(HEALTHY + "Step 420: loss=nan, lr=1e-4, grad_norm=1.0\n")
    proc, out = _no_terminal(["tail", "run.log", "--no-gpu", "--exit-on", "critical"], tmp_path)
    assert_headless_format(out)
    script = tmp_path / "train.py"
    script.write_text(f"print(open({str(tmp_path / 'run.log')!r}).read(), end='')\n")
    proc, out = _no_terminal(["run", "--no-gpu", "--log", "child.log", "--", sys.executable, str(script)], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert_headless_format(out)


def test_tail_help_names_themes_severities_and_defaults() -> None:
    from trainwatch.tui.themes import builtin_themes

    text = " ".join(tw("tail", "--help").stdout.split())
    for name in builtin_themes():
        assert name in text.replace("- ", "-"), name  # argparse may wrap after a hyphen
    assert "info, warning or critical" in text
    for default in ("(default 1)", "(default 10)", "(default 2)", "(default warning)", "(default: never)"):
        assert default in text, default
    assert "--until-done close the dashboard when every run has ended" in text


@pytest.mark.parametrize("fmt,first", [
    ("jsonl", '{"step": 100000000000000000000, "loss": 1.0}'),
    ("keyvalue", "step 100000000000000000000 loss 1.0"),
    ("hf_console", "{'step': 100000000000000000000, 'loss': 1.0, 'epoch': 0.1}"),  # a Trainer dict's own step
    ("hf_console", "  0%|          | 5/100000000000000000000 [00:01<00:09, 9.9it/s]\r{'loss': 1.0, 'epoch': 0.01}"),
], ids=["jsonl", "keyvalue", "trainer-step", "trainer-bar"])
def test_a_step_no_int64_holds_is_read_as_no_step(tmp_path: Path, fmt: str, first: str) -> None:
    """Log text is untrusted: a step of 10**20 makes the row one without a printed step (the engine keeps
    steps in int64 columns), never a traceback; the rest of the log is read."""
    path = tmp_path / "big.log"
    path.write_text(first + "\n" + first.replace("100000000000000000000", "7") + "\n")
    proc = tw("check", "--json", "--format", fmt, str(path))
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1, 2), proc.stderr
    loss = json.loads(proc.stdout)["sources"][0]["metrics"]["loss"]
    assert loss["count"] == 2 and loss["last"] == 1.0


def test_trainer_dicts_counted_on_past_the_int64_limit_are_read(tmp_path: Path) -> None:
    """A Trainer dict prints a step just under INT64_MAX (as a float it rounds past it) and the dicts after
    it print none, so their steps count on from it: the chunk read from the arrays must give those rows
    no step, not raise (an adapter that raises loses its chunk, and check said nothing was understood)."""
    path = tmp_path / "near.log"
    dicts = [f"{{'loss': 1.0, 'epoch': {0.1 + i / 100:.2f}}}" for i in range(1, 6)]
    path.write_text("\n".join(["{'step': 9223372036854775806, 'loss': 1.0, 'epoch': 0.1}", *dicts]) + "\n")
    proc = tw("check", "--json", "--format", "hf_console", str(path))
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1, 2), proc.stderr
    assert json.loads(proc.stdout)["sources"][0]["metrics"]["loss"]["count"] == 6


def test_values_near_the_largest_float_print_no_numpy_warning(tmp_path: Path) -> None:
    """Log text is untrusted: a loss or grad-norm near the largest float makes the spike rules' ratio
    times the window's minimum or median overflow, which is only a row that is no spike, never a numpy
    warning on stderr (tw() silences warnings, so the command runs without that here)."""
    p = tmp_path / "run.jsonl"
    p.write_text("".join(json.dumps({"step": s, "loss": 1e308 if s % 3 else 1.0,
                                     "grad_norm": 1.7e308 if s % 2 else 2.0,
                                     "step_time_ms": 1.7e308 if s % 5 else 2.0,
                                     "tokens_per_sec": 1.7e308 if s % 4 else 1e-300}) + "\n"
                         for s in range(1, 400)))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(p)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode in (1, 2), proc.stdout
    assert proc.stderr == ""


def test_an_lr_near_the_largest_float_prints_no_numpy_warning(tmp_path: Path) -> None:
    """As above, for the LR rules (the resume gate's `1.2 * before`, the decay's `ratio * lows`): every
    metric now and then near the largest float or the smallest, signed zeros too."""
    import random

    r = random.Random(5)
    odd = [1.7e308, -1.7e308, 5e-324, -5e-324, 0.0, -0.0, 1e-310]
    lines = []
    for i in range(1, 3000):
        row = {k: r.choice(odd) if r.random() < 0.05 else r.uniform(0.1, 3)
               for k in ("loss", "lr", "grad_norm", "tokens_per_sec", "eval_loss", "reward", "step_time")}
        lines.append(json.dumps({"step": i, **row}))
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}  # warnings shown, as a user sees them
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(path)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode in (0, 1, 2)
    assert "Warning" not in proc.stderr, proc.stderr
