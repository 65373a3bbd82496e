"""A traceback is read as the program printed it: torch quoting the worker's own traceback under
`Original Traceback` is one error with its root inside; a traceback a logger printed as a warning is an
exception the program handled and went on from, not a crash; a run whose config names an object that
cannot be built (Hydra) never started, with or without a traceback."""

from __future__ import annotations

from pathlib import Path

from trainwatch import runner
from trainwatch.adapters.signatures import SignatureScanner
from trainwatch.model import Alert, Event, EventKind, Severity
from trainwatch.session import LogClock, Session

STEPS = "".join(f"Step {s}: loss={2.0 - s / 100:.3f}, lr=1e-4, grad_norm=1.0\n" for s in (10, 20, 30))
LATER = "".join(f"Step {s}: loss={1.6 - s / 1000:.3f}, lr=1e-4, grad_norm=1.0\n" for s in (40, 50, 60))
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of "
       "63.42 GiB of which 1.20 GiB is free.")


def scan(lines: list[str]) -> list[Event]:
    sc = SignatureScanner("log")
    out = [e for n, line in enumerate(lines, 1) for e in sc.feed(line, n)]
    return out + sc.finish()


def check_text(tmp_path: Path, text: str) -> list[Alert]:
    p = tmp_path / "run.log"
    p.write_text(text)
    src = runner.open_source(p)
    session = Session([src], clock=LogClock(0.0))
    session.read_file(src)
    return session.engine.alerts()


def worker_reraise(caught: str, where: str, exc_line: str) -> list[str]:
    """torch's ExceptionWrapper.reraise: the driver's traceback, then the worker's under `Original Traceback`."""
    return [
        "Traceback (most recent call last):",
        '  File "/w/train.py", line 40, in <module>',
        "    trainer.train()",
        '  File "/env/torch/_utils.py", line 715, in reraise',
        "    raise exception",
        f"torch.{caught}: Caught {caught} in {where}.",
        "Original Traceback (most recent call last):",
        '  File "/env/torch/nn/parallel/parallel_apply.py", line 96, in _worker',
        "    output = module(*input, **kwargs)",
        '  File "/env/torch/nn/modules/linear.py", line 125, in forward',
        "    return F.linear(input, self.weight, self.bias)",
        exc_line,
    ]


def test_original_traceback_is_the_same_error_quoted_not_a_second_one() -> None:
    tbs = [e for e in scan(worker_reraise("OutOfMemoryError", "replica 0 on device 0", OOM))
           if e.kind is EventKind.TRACEBACK]
    assert len(tbs) == 1
    assert tbs[0].fields["signatures"] == ["oom.cuda"] and tbs[0].fields["frames"] == 4


def test_a_replicas_oom_and_its_driver_traceback_are_one_critical(tmp_path: Path) -> None:
    text = "\n".join(worker_reraise("OutOfMemoryError", "replica 0 on device 0", OOM)) + "\n"
    alerts = check_text(tmp_path, text)
    assert [(a.rule, a.severity) for a in alerts if a.severity >= Severity.WARNING] == \
        [("oom.cuda", Severity.CRITICAL)]


def test_a_data_loader_workers_error_is_named_by_the_worker_s_exception(tmp_path: Path) -> None:
    lines = worker_reraise("KeyError", "DataLoader worker process 0", "KeyError: 'image_path'")
    (tb,) = [a for a in check_text(tmp_path, STEPS + "\n".join(lines) + "\n") if a.rule == "error.traceback"]
    assert tb.severity is Severity.CRITICAL
    assert tb.finding.message.startswith("KeyError: 'image_path'")  # the root, then what the driver raised


GLOG = "{lvl}0530 14:48:26.433000 2622492 site-packages/torch/_dynamo/convert_frame.py:1233] "


def logged_traceback(level: str) -> list[str]:
    """torch's own logging: every line of a recovered compile failure carries the glog prefix."""
    body = [
        "WON'T CONVERT forward /w/model.py line 228 ",
        "due to: ",
        "Traceback (most recent call last):",
        '  File "/env/torch/_dynamo/convert_frame.py", line 1164, in __call__',
        "    result = self._inner_convert(",
        '  File "/env/triton/compiler/compiler.py", line 390, in _init_handles',
        "    self.module, self.function = driver.active.utils.load_binary(",
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
        "SystemError: PY_SSIZE_T_CLEAN macro must be defined for '#' formats",
        "",
        'Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information',
    ]
    return [GLOG.format(lvl=level) + line for line in body]


def test_a_logger_prefix_on_every_line_is_read_through() -> None:
    (tb,) = [e for e in scan(logged_traceback("W")) if e.kind is EventKind.TRACEBACK]
    assert tb.fields["exception"] == "BackendCompilerFailed" and tb.fields["frames"] == 2
    assert "PY_SSIZE_T_CLEAN" in tb.fields["message"] and tb.fields["logged_as"] == "warning"


def test_a_traceback_logged_as_a_warning_is_no_crash(tmp_path: Path) -> None:
    text = STEPS + "\n".join(logged_traceback("W") * 3) + "\n" + LATER
    alerts = check_text(tmp_path, text)
    assert not [a for a in alerts if a.severity >= Severity.WARNING]
    (tb,) = [a for a in alerts if a.rule == "error.traceback"]
    assert tb.severity is Severity.INFO and "logged as a warning" in tb.finding.message


def test_a_traceback_logged_as_an_error_is_still_a_crash(tmp_path: Path) -> None:
    lines = [x.replace("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
                       "RuntimeError: shapes do not match") for x in logged_traceback("E")]
    (tb,) = [a for a in check_text(tmp_path, STEPS + "\n".join(lines) + "\n") if a.rule == "error.traceback"]
    assert tb.severity is Severity.CRITICAL and tb.finding.evidence["exception"] == "RuntimeError"


def test_a_known_error_inside_a_warning_traceback_says_less(tmp_path: Path) -> None:
    lines = [GLOG.format(lvl="W") + x for x in ("Traceback (most recent call last):",
                                                '  File "/env/torch/_inductor/select_algorithm.py", line 9, in tune',
                                                "    kernel.benchmark()", OOM)]
    alerts = check_text(tmp_path, STEPS + "\n".join(lines) + "\n" + LATER)
    (oom,) = [a for a in alerts if a.rule == "oom.cuda"]
    assert oom.severity is Severity.WARNING and "logged as a warning" in oom.finding.message
    assert not [a for a in alerts if a.severity is Severity.CRITICAL]


def test_python_logging_a_caught_exception_as_a_warning(tmp_path: Path) -> None:
    lines = ["WARNING:root:Traceback (most recent call last):", '  File "/w/eval.py", line 3, in score',
             "    bleu = compute(refs)", "ZeroDivisionError: division by zero"]
    alerts = check_text(tmp_path, STEPS + "\n".join(lines) + "\n" + LATER)
    assert [a.severity for a in alerts if a.rule == "error.traceback"] == [Severity.INFO]


def test_hydra_instantiate_errors_without_a_traceback_are_critical(tmp_path: Path) -> None:
    lines = [f"[2022-04-30 13:2{i}:01,117][hydra.utils][ERROR] - Error instantiating model_ssg.PointNet2SemSegSSG : "
             f"{why}" for i, why in enumerate(("No module named 'pointnet2_ops'",
                                                "CUDA_HOME environment variable is not set."))]
    alerts = check_text(tmp_path, "\n".join(lines) + "\n")
    (a,) = [a for a in alerts if a.severity >= Severity.WARNING]
    assert a.rule == "run.instantiate_failed" and a.severity is Severity.CRITICAL
    assert a.finding.message == ("could not instantiate model_ssg.PointNet2SemSegSSG: "
                                 "No module named 'pointnet2_ops'") and a.count == 2


def test_hydra_compact_error_after_the_job_failed_is_one_critical(tmp_path: Path) -> None:
    lines = ["Error executing job with overrides: ['model=unet']", "Traceback (most recent call last):",
             '  File "/w/train.py", line 20, in main', "    model = instantiate(cfg.model)",
             "hydra.errors.InstantiationException: Error in call to target 'models.unet.UNet':",
             "ModuleNotFoundError(\"No module named 'segmentation_models_pytorch'\")", "full_key: model"]
    alerts = check_text(tmp_path, "\n".join(lines) + "\n")
    assert [(a.rule, a.severity) for a in alerts if a.severity >= Severity.WARNING] == \
        [("run.instantiate_failed", Severity.CRITICAL)]


def test_a_traceback_python_ignored_at_exit_is_no_crash(tmp_path: Path) -> None:
    """`Exception ignored in atexit callback` (or in a __del__) heads a traceback Python printed and went on
    from: info, not a crash. The same traceback without that header is still one."""
    tb = ["Traceback (most recent call last):",
          '  File "/env/deepspeed/ops/matmul_ext.py", line 105, in put',
          "    os.replace(self.file_path + '.tmp', self.file_path)",
          "FileNotFoundError: [Errno 2] No such file or directory: '/home/u/.triton/autotune/k.pickle.tmp'"]
    ignored = [f"1: {line}" for line in ["Exception ignored in atexit callback: <function update_table at 0x7f>", *tb]]
    alerts = check_text(tmp_path, STEPS + "\n".join(ignored) + "\n")
    told = [a for a in alerts if a.rule == "error.traceback"]
    assert told and all(a.severity is Severity.INFO for a in told) and "ignored" in told[0].finding.message
    crashed = check_text(tmp_path, STEPS + "\n".join(tb) + "\n")
    assert any(a.rule == "error.traceback" and a.severity is Severity.CRITICAL for a in crashed)


THREAD_TB = ["Traceback (most recent call last):",
             '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner',
             "    self.run()",
             '  File "/usr/lib/python3.11/subprocess.py", line 1599, in _readerthread',
             "    buffer.append(fh.read())",
             "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xad in position 7: invalid start byte"]


def test_a_traceback_that_ended_a_thread_is_no_crash_of_the_run(tmp_path: Path) -> None:
    """`Exception in thread X:` heads a traceback that ended thread X, not the program: a warning that the
    thread died, not critical, and no root that a later error would be the echo of. The same traceback
    without that header is a crash; a crash of the main thread after a thread's death is one too."""
    thread = ["Exception in thread Thread-2 (_readerthread):", *THREAD_TB]
    alerts = check_text(tmp_path, STEPS + "\n".join(thread) + "\n" + LATER)
    (tb,) = [a for a in alerts if a.rule == "error.traceback"]
    assert tb.severity is Severity.WARNING and "Thread-2 (_readerthread) died" in tb.finding.message
    assert not [a for a in alerts if a.severity is Severity.CRITICAL]
    bare = check_text(tmp_path, STEPS + "\n".join(THREAD_TB) + "\n")
    assert [a.severity for a in bare if a.rule == "error.traceback"] == [Severity.CRITICAL]
    main = ["Traceback (most recent call last):", '  File "/w/train.py", line 9, in <module>', "    train()",
            "RuntimeError: shapes do not match"]
    both = check_text(tmp_path, STEPS + "\n".join(thread) + "\n" + LATER + "\n".join(main) + "\n")
    assert max(a.severity for a in both if a.rule == "error.traceback") is Severity.CRITICAL
