"""A root cause beats its echoes; copies from several ranks are one finding; a crash is dated where it ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from rulekit import Run

from trainwatch import runner
from trainwatch.adapters.signatures import SignatureScanner
from trainwatch.model import Alert, EventKind, Severity
from trainwatch.session import LogClock, Session

ROOT = Path(__file__).resolve().parents[2]
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.92 GiB. GPU {r} has a total capacity of "
       "79.18 GiB of which 1.40 GiB is free. Of the allocated memory 74.94 GiB is allocated by PyTorch, and "
       "324.03 MiB is reserved by PyTorch but unallocated.")
STEPS = "".join(f"Step {s}: loss={2.0 - s / 100:.3f}, lr=1e-4, grad_norm=1.0\n" for s in (10, 20, 30))


def rank_traceback(rank: int, exc_line: str) -> list[str]:
    return [f"[rank{rank}]: {x}" for x in (
        "Traceback (most recent call last):",
        '  File "/w/train.py", line 88, in <module>',
        "    trainer.train()",
        '  File "/w/trainer.py", line 12, in train',
        "    loss.backward()",
        exc_line)]


def check_text(tmp_path: Path, text: str, name: str = "run.log") -> dict[str, Alert]:
    p = tmp_path / name
    p.write_text(text)
    src = runner.open_source(p)
    session = Session([src], clock=LogClock(0.0))
    session.read_file(src)
    return {a.rule: a for a in session.engine.alerts()}


def test_interleaved_rank_copies_are_one_finding_listing_the_ranks(tmp_path: Path) -> None:
    a, b = rank_traceback(1, OOM.format(r=1)), rank_traceback(0, OOM.format(r=0))
    mixed = [x for pair in zip(a, b) for x in pair]
    scanner = SignatureScanner("log")
    events = [e for n, line in enumerate(mixed, 1) for e in scanner.feed(line, n)] + scanner.finish()
    tbs = [e for e in events if e.kind is EventKind.TRACEBACK]
    assert sorted(t.fields["rank"] for t in tbs) == [0, 1]
    assert all(t.fields["complete"] and t.fields["exception"] == "OutOfMemoryError" for t in tbs)

    alerts = check_text(tmp_path, STEPS + "\n".join(mixed) + "\n")
    assert set(alerts) == {"oom.cuda"}  # the tracebacks hold the OOM: no second finding for them
    oom = alerts["oom.cuda"]
    assert oom.count == 2 and oom.finding.evidence["ranks"] == [1, 0]
    assert "(rank 1)" in oom.finding.message and oom.finding.evidence["gpu"] == 1  # the first copy's figures


def test_same_plain_error_from_two_ranks_is_one_finding(tmp_path: Path) -> None:
    text = "\n".join(rank_traceback(0, "RuntimeError: shape mismatch in layer 3") +
                     rank_traceback(1, "RuntimeError: shape mismatch in layer 3")) + "\n"
    alerts = check_text(tmp_path, STEPS + text)
    assert list(alerts) == ["error.traceback"]
    tb = alerts["error.traceback"]
    assert tb.severity is Severity.CRITICAL and tb.count == 2 and tb.finding.evidence["ranks"] == [0, 1]
    assert tb.finding.message == "RuntimeError: shape mismatch in layer 3"


def test_child_failed_and_driver_traceback_after_the_oom_are_its_echoes(tmp_path: Path) -> None:
    torchrun = (ROOT / "examples" / "runs" / "ddp_rank_failure" / "torchrun.log").read_text()
    text = STEPS + "\n".join(rank_traceback(1, OOM.format(r=1))) + "\n" + torchrun
    alerts = check_text(tmp_path, text)
    assert alerts["oom.cuda"].severity is Severity.CRITICAL
    child = alerts["run.child_failed"]
    assert child.severity is Severity.INFO
    assert "rank 1 failed first" in child.finding.message and "CUDA out of memory" in child.finding.message
    assert [a.rule for a in alerts.values() if a.severity is Severity.CRITICAL] == ["oom.cuda"]


def test_launcher_blaming_another_rank_is_no_echo(tmp_path: Path) -> None:
    torchrun = (ROOT / "examples" / "runs" / "ddp_rank_failure" / "torchrun.log").read_text()  # blames rank 1
    alerts = check_text(tmp_path, STEPS + "\n".join(rank_traceback(0, OOM.format(r=0))) + "\n" + torchrun)
    assert alerts["run.child_failed"].severity is Severity.CRITICAL


def test_an_error_after_training_went_on_is_a_new_root(tmp_path: Path) -> None:
    early = "\n".join(rank_traceback(0, "ValueError: bad sample skipped")) + "\n"
    later = "Step 40: loss=1.5, lr=1e-4, grad_norm=1.0\n" + \
        "torch.distributed.DistBackendError: NCCL error in: ../nccl.cpp:1970, unhandled system error\n"
    alerts = check_text(tmp_path, STEPS + early + later)
    assert alerts["hang.nccl"].severity is Severity.CRITICAL


def test_crash_is_dated_at_the_running_step(tmp_path: Path) -> None:
    alerts = check_text(tmp_path, STEPS + "\n".join(rank_traceback(0, OOM.format(r=0))) + "\n")
    oom = alerts["oom.cuda"]
    assert (oom.first_step, oom.finding.step_inferred) == (31, True)


@pytest.mark.parametrize(("exc_line", "step", "inferred"), [
    ("RuntimeError: synthetic failure on rank 1 at step 34: corrupted batch", 34, False),
    ("ValueError: bad batch (global_step=33)", 33, False),
    ("RuntimeError: loss is NaN at iteration 32", 32, False),
    # numbers that are no step: a line, a rank, a size, a longer name, two different steps, one before the last
    ("RuntimeError: parse error at line 57 of shard 9", 31, True),
    ("RuntimeError: rank 3 sent 4096 bytes, expected 8192", 31, True),
    ("ValueError: max_steps=500 but step_size=4", 31, True),
    ("RuntimeError: expected step 32, checkpoint holds step 33", 31, True),
    ("RuntimeError: stale gradient from step 12", 31, True),
])
def test_an_error_that_names_its_step_is_dated_there(tmp_path: Path, exc_line: str, step: int,
                                                     inferred: bool) -> None:
    """The error's own text says the step it failed at: the finding is dated there, not at the step after
    the last one logged; a number the text gives for anything else (or one before the last logged step,
    which the failing step cannot be) leaves the inferred step."""
    tb = check_text(tmp_path, STEPS + "\n".join(rank_traceback(1, exc_line)) + "\n")["error.traceback"]
    assert (tb.first_step, tb.finding.step, tb.finding.step_inferred) == (step, step, inferred)


def test_crash_in_a_checkpoint_save_keeps_the_step(tmp_path: Path) -> None:
    run = Run()
    for s in (1, 2):
        run.step(s, loss=2.0)
    run.event(EventKind.CHECKPOINT)
    run.event(EventKind.ERROR, signature="ckpt.disk_full",
              text="RuntimeError: PytorchStreamWriter failed writing file data/5: file write failed")
    alert = run.alert("ckpt.disk_full")
    assert alert.first_step == 2 and not alert.finding.step_inferred
    assert alert.finding.message == "checkpoint save failed (no space left)"


def test_chained_traceback_is_named_by_its_root(tmp_path: Path) -> None:
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "/w/data.py", line 3, in get',
        "KeyError: 'labels'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/w/train.py", line 9, in <module>',
        "RuntimeError: batch collation failed",
        "next line"]) + "\n"
    tb = check_text(tmp_path, STEPS + text)["error.traceback"]
    assert tb.severity is Severity.CRITICAL
    assert tb.finding.message.startswith("KeyError: 'labels'") and "(then RuntimeError)" in tb.finding.message


def test_quoted_import_failure_with_undefined_symbol_is_the_root(tmp_path: Path) -> None:
    """Ray quotes a worker's traceback inside its own error; the driver's assertion comes after."""
    so = "/env/site-packages/flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so: undefined symbol: _ZNK3c1011Storage"
    text = "\n".join([
        "(raylet) Traceback (most recent call last):",
        '  File "python/ray/_raylet.pyx", line 2276, in ray._raylet.task_execution_handler',
        "RuntimeError: The actor with name WorkerDict failed to import on the worker:",
        "",
        "Traceback (most recent call last):",
        '  File "/env/site-packages/flash_attn/flash_attn_interface.py", line 15, in <module>',
        "    import flash_attn_2_cuda as flash_attn_gpu",
        f"ImportError: {so}",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/env/site-packages/transformers/utils/import_utils.py", line 1795, in _get_module',
        "RuntimeError: Failed to import transformers.models.mistral.modeling_mistral because of the following"
        " error (look up to see its traceback):",
        so,
        "",
        "Error executing job with overrides: []",
        "Traceback (most recent call last):",
        '  File "/w/main_ppo.py", line 105, in main',
        "ray.exceptions.RayTaskError(AssertionError): ray::main_task() (pid=2105103, ip=10.0.0.7)",
        '  File "/w/ray_trainer.py", line 528, in init_workers',
        "AssertionError: failed to get register_center_actor",
        "",
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace."]) + "\n"
    alerts = check_text(tmp_path, text, "driver.log")
    abi = alerts["env.abi_mismatch"]
    assert abi.severity is Severity.CRITICAL and abi.finding.evidence["library"] == "flash_attn_2_cuda"
    assert "built against another torch" in abi.finding.message
    assert abi.first_step is None
    driver = alerts["error.traceback"]
    assert driver.severity is Severity.INFO
    assert driver.finding.message.startswith("Python traceback") is False
    assert "AssertionError: failed to get register_center_actor" in driver.finding.message
    assert "an echo of the first error, at line 8" in driver.finding.message


def test_module_not_found_names_the_import(tmp_path: Path) -> None:
    text = "\n".join(["Traceback (most recent call last):", '  File "/w/train.py", line 1, in <module>',
                      "ModuleNotFoundError: No module named 'deepspeed'", "done"]) + "\n"
    tb = check_text(tmp_path, text)["error.traceback"]
    assert tb.finding.message.startswith("import of deepspeed failed: ModuleNotFoundError")
    assert tb.fixes[0].startswith("Import the module by hand")


def test_launcher_report_of_a_sigterm_first_is_a_kill_from_outside(tmp_path: Path) -> None:
    report = "\n".join([
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  rank      : 4 (local_rank: 4)",
        "  exitcode  : -15 (pid: 208585)",
        "  traceback : Signal 15 (SIGTERM) received by PID 208585",
        "============================================================"]) + "\n"
    alerts = check_text(tmp_path, STEPS + report)
    sig = alerts["run.signal"]
    assert sig.severity is Severity.WARNING
    assert sig.finding.message == "rank 4 was ended by signal 15 before any other failure"


def test_shared_memory_full_is_told_apart_from_a_full_disk(tmp_path: Path) -> None:
    line = ("RuntimeError: unable to write to file </torch_4177_1771539287_0>: No space left on device (28)\n")
    full = check_text(tmp_path, STEPS + line)["ckpt.disk_full"]
    assert full.finding.message.startswith("shared memory (/dev/shm) is full")
    assert full.fixes[0].startswith("In a container, enlarge /dev/shm")


def test_a_full_temporary_directory_hears_of_tmpdir_not_of_an_incomplete_checkpoint(tmp_path: Path) -> None:
    """The failed write names its path: a temp file under /tmp (a DataLoader's multiprocessing queue) is
    advised TMPDIR, and no checkpoint advice, which would tell the user a checkpoint is broken that was never
    written; a checkpoint save still hears the checkpoint advice."""
    line = "OSError: [Errno 28] No space left on device: '/tmp/pymp-2ntknau9'\n"
    full = check_text(tmp_path, STEPS + line)["ckpt.disk_full"]
    assert full.finding.evidence["case"] == "temp" and "/tmp/pymp-2ntknau9" in full.finding.message
    assert any("TMPDIR" in f for f in full.fixes)
    assert not any("checkpoint" in f.lower() for f in full.fixes)
    save = ("RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 123 vs 456\n"
            "RuntimeError: PytorchStreamWriter failed writing file data/5: file write failed\n")
    ckpt = check_text(tmp_path, STEPS + save, "save.log")["ckpt.disk_full"]
    assert ckpt.finding.evidence["case"] == "checkpoint"
    assert any("must not be resumed from" in f for f in ckpt.fixes) and not any("TMPDIR" in f for f in ckpt.fixes)


def test_hf_trainer_argument_names_are_told_to_hf_trainer_runs_alone(tmp_path: Path) -> None:
    """`save_total_limit` is the HF Trainer's: a plain log of another framework hears 'keep fewer checkpoints'
    without it; a log that shows the HF Trainer at work hears its argument name."""
    save = "RuntimeError: PytorchStreamWriter failed writing file data/5: file write failed\n"
    plain = check_text(tmp_path, STEPS + save)["ckpt.disk_full"]
    assert any(f.startswith("Keep fewer checkpoints") for f in plain.fixes)
    assert not any("save_total_limit" in f for f in plain.fixes)
    hf = check_text(tmp_path, "***** Running training *****\n" + STEPS + save, "hf.log")["ckpt.disk_full"]
    assert any("save_total_limit" in f for f in hf.fixes)


def test_disk_full_in_a_logged_warning_is_a_warning(tmp_path: Path) -> None:
    line = "2024-05-01 12:00:00 - WARNING - could not write the dataset cache: [Errno 28] No space left on device\n"
    full = check_text(tmp_path, STEPS + line)["ckpt.disk_full"]
    assert full.severity is Severity.WARNING and "logged as a warning" in full.finding.message


def test_launcher_blaming_a_rank_that_printed_the_root_error_is_its_echo(tmp_path: Path) -> None:
    torchrun = (ROOT / "examples" / "runs" / "ddp_rank_failure" / "torchrun.log").read_text()  # blames rank 1
    err = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!"
    text = "\n".join(rank_traceback(0, err) + rank_traceback(1, err)) + "\n" + torchrun
    alerts = check_text(tmp_path, STEPS + text)
    assert alerts["error.traceback"].severity is Severity.CRITICAL
    child = alerts["run.child_failed"]
    assert child.severity is Severity.INFO and "echo of the first error" in child.finding.message


def test_a_rank_that_lost_its_peer_is_the_echo_of_the_peers_own_error_in_either_order(tmp_path: Path) -> None:
    """gloo's `Connection closed by peer .. caused by a remote worker crashing` on rank 0 follows rank 1's own
    error: one critical (rank 1's), and rank 0's an info echo naming it, whichever log is read first."""
    lost = ("RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:38601. This is typically caused by "
            "a remote worker crashing.")
    own = "RuntimeError: synthetic failure on rank 1 at step 30: corrupted batch"
    for order in ((0, 1), (1, 0)):
        folder = tmp_path / f"order{order[0]}"
        folder.mkdir()
        for rank in order:
            exc = lost if rank == 0 else own
            (folder / f"rank{rank}.log").write_text(STEPS + "\n".join(rank_traceback(rank, exc)) + "\n")
        srcs = [runner.open_source(folder / f"rank{r}.log") for r in order]
        session = Session(srcs, clock=LogClock(0.0))
        for src in srcs:
            session.read_file(src)
        errors = {Path(a.finding.source).name: a for a in session.engine.alerts() if a.rule == "error.traceback"}
        assert errors["rank1.log"].severity is Severity.CRITICAL
        assert errors["rank0.log"].severity is Severity.INFO
        assert "rank1.log line" in errors["rank0.log"].finding.evidence["root_cause"]
