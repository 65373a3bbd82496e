"""Error signatures: each one matched, figures parsed, prose left alone; tracebacks captured whole."""

from __future__ import annotations

import pytest

from trainwatch.adapters.signatures import SignatureScanner, signature_ids
from trainwatch.model import Event, EventKind

BRIEF_IDS = {
    "oom.cuda", "oom.host", "deepspeed.exit7", "hang.nccl", "cuda.illegal_access", "cuda.device_assert",
    "cuda.ecc", "gpu.xid", "fp16.overflow", "data.pad_token", "deepspeed.dummy_optim", "rl.reward_import",
    "rl.generation_batch", "fsdp.weight_2d", "ckpt.checkpoint_error", "rl.bf16_weight_sync",
    "data.chat_template_boundary", "data.cas_error", "loss.nan_message", "run.signal", "run.child_failed",
    "megatron.grad_nan", "ckpt.disk_full", "env.abi_mismatch", "compile.failed", "run.bad_args",
    "run.killed", "run.native_crash", "sched.time_limit", "sched.cancelled", "sched.preempted", "sched.job_failed",
    "sched.job_report",
    "oom.skipped",
    "oom.fallback",
    "run.instantiate_failed",
}


def scan(lines: list[str]) -> list[Event]:
    sc = SignatureScanner("log")
    out: list[Event] = []
    for n, line in enumerate(lines, 1):
        out.extend(sc.feed(line, n))
    out.extend(sc.finish())
    return out


def errors(lines: list[str]) -> list[Event]:
    return [e for e in scan(lines) if e.kind == EventKind.ERROR]


def test_ids_are_the_briefs() -> None:
    assert signature_ids() == BRIEF_IDS


ONE_LINERS = [
    ("oom.cuda", "CUDA error: out of memory"),
    ("run.killed", "Killed"),
    ("run.killed", "E0101 12:00:00 api.py:869] failed (exitcode: -9) local_rank: 0 (pid: 4242) of binary: /bin/python"),
    ("deepspeed.exit7", "[launch.py:316:sigkill_handler] failed (exitcode: -7) local_rank: 1 (pid: 99) of binary"),
    ("hang.nccl", "[rank1]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective "
                  "operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
                  "ran for 600042 milliseconds before timing out."),
    ("hang.nccl", "NCCL communicator was aborted on rank 3."),
    ("hang.nccl", "torch.distributed.DistBackendError: NCCL error in: ../nccl.cpp:1970, unhandled cuda error"),
    ("hang.nccl", "ncclUnhandledCudaError: Call to CUDA function failed."),
    ("cuda.illegal_access", "RuntimeError: CUDA error: an illegal memory access was encountered"),
    ("cuda.device_assert", "RuntimeError: CUDA error: device-side assert triggered"),
    ("cuda.device_assert", "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward: block: [0,0,0], "
                           "thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed."),
    ("cuda.ecc", "RuntimeError: CUDA error: uncorrectable ECC error encountered"),
    ("gpu.xid", "[ 1234.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."),
    ("fp16.overflow", "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0"),
    ("fp16.overflow", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768"),
    ("data.pad_token", "ValueError: Asking to pad but the tokenizer does not have a padding token."),
    ("deepspeed.dummy_optim", "AttributeError: 'DummyOptim' object has no attribute 'step'"),
    ("rl.reward_import", "unable to load strategy my_rewards.fmt, then None is not callable"),
    ("rl.generation_batch", "ValueError: generation_batch_size (6) is not divisible by num_generations (4)"),
    ("fsdp.weight_2d", "RuntimeError: 'weight' must be 2-D"),
    ("ckpt.checkpoint_error", "torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: A different number of "
                              "tensors was saved during the original forward and recomputation."),
    ("rl.bf16_weight_sync", "TypeError: Got unsupported ScalarType BFloat16"),
    ("data.chat_template_boundary", "ValueError: Content end boundary is before start boundary"),
    ("data.cas_error", "RuntimeError: CAS service error : Reqwest Error: HTTP status server error (500)"),
    ("loss.nan_message", "ValueError: The loss returned in `training_step` is nan."),
    ("loss.nan_message", "Loss is nan, stopping training"),
    ("loss.nan_message", "Unexpected result nan (message='loss is NaN')"),
    ("run.signal", "W1227 22:43:28.153000 54958 torch/distributed/elastic/agent/server/api.py:725] Received 15 death "
                   "signal, shutting down workers"),
    ("run.signal", "torch.distributed.elastic.multiprocessing.api.SignalException: Process 54958 got signal: 15"),
    ("megatron.grad_nan", "RuntimeError: Rank 3: found NaN in local grad norm for bucket #0 in backward pass"),
    ("ckpt.disk_full", "[rank0]: RuntimeError: [enforce fail at inline_container.cc:858] . PytorchStreamWriter failed "
                       "writing file data/5: file write failed"),
    ("ckpt.disk_full", "OSError: [Errno 28] No space left on device: '/ckpt/checkpoint-500/optimizer.pt'"),
    ("ckpt.disk_full", "tee: /runs/exp1/train.log: No space left on device"),
    ("env.abi_mismatch", "ImportError: /env/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu"
                         ".so: undefined symbol: _ZN3c104cuda9SetDeviceEi"),
    ("compile.failed", "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:"),
    ("compile.failed", "torch._inductor.exc.InductorError: LoweringException: AssertionError: "),
    ("compile.failed", "(main_task pid=4242) torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:"),
    ("oom.host", "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you "
                 "tried to allocate 21474836480 bytes."),
    ("oom.host", "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 9663676416 bytes. "
                 "Error code 12 (Cannot allocate memory)"),
    ("hang.nccl", "RuntimeError: NCCL Error 2: unhandled system error"),
    ("run.killed", "[2023-11-08 10:12:41,315] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', "
                 "'finetune.py', '--local_rank=0'] exits with return code = -9"),
    ("run.bad_args", "train_bash.py: error: argument --fp16: Truthy value expected: got 1 but expected one of "
                     "yes/no, true/false, t/f, y/n, 1/0 (case insensitive)."),
    ("run.bad_args", "finetune.py: error: unrecognized arguments: --lora_rnak 8"),
    ("run.killed", "/home/u/.lsbatch/1586903179.shell: line 12: 24905 Killed                  python main.py"),
    ("oom.host", "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit."),
    ("oom.host", "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=4242.0. Some of your processes may have "
                 "been killed by the cgroup out-of-memory handler."),
]


KILL_LINES = [  # how a run is stopped from outside: each says who did it where the log tells
    ("oom.host", "[81234.5] Out of memory: Killed process 4242 (python) total-vm:98765432kB, anon-rss:87654321kB"),
    ("oom.host", "[81234.5] python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0"),
    ("run.killed", "srun: error: node07: task 0: Exited with exit code 137"),
    ("run.signal", "[rank: 2] Received SIGTERM: 15"),
    ("run.signal", "Epoch 0:  31%|###       | 1225/3999 [35:10<1:19:38, 0.58it/s, v_num=29, loss=1.23][rank: 2] "
                   "Received SIGTERM: 15"),
    ("run.signal", "W0101 12:00:00.000 1 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM "
                   "death signal, shutting down workers"),
    ("run.signal", "/var/spool/slurmd/job42/slurm_script: line 9: 31337 Terminated              python train.py"),
    ("run.signal", "Terminated"),
    ("sched.time_limit", "slurmstepd: error: *** JOB 3726778 ON gpu12 CANCELLED AT 2024-03-02T11:22:33 DUE TO TIME "
                         "LIMIT ***"),
    ("sched.time_limit", "slurmstepd: error: *** STEP 42.0 ON gpu12 CANCELLED AT 2024-03-02T11:22:33 DUE TO TIME LIMIT "
                         "***"),
    ("sched.time_limit", "=>> PBS: job killed: walltime 86430 exceeded limit 86400"),
    ("sched.time_limit", "TERM_RUNLIMIT: job killed after reaching LSF run time limit."),
    ("sched.cancelled", "slurmstepd: error: *** JOB 2584 ON hgx CANCELLED AT 2024-05-06T07:08:09 ***"),
    ("sched.job_failed", "Exited with exit code 1."),
    ("oom.skipped", "2022-05-08 18:25:27,469 - INFO - WARNING: ran out of memory"),
    ("oom.fallback", "WARNING \u26a0\ufe0f CUDA OutOfMemoryError in TaskAlignedAssigner, using CPU"),
    ("oom.skipped", "| WARNING: ran out of memory with exception: CUDA out of memory. Tried to allocate 20.00 MiB;"
                    " skipping batch"),  # LSF's report of a job whose command failed
    ("sched.job_failed", "    Exit_status=2"),  # PBS
    ("sched.job_report", "Job Wall-clock time: 15:51:00"),  # seff, in a Slurm epilogue
    ("sched.job_failed", "\t(1) Normal termination (return value 1)"),  # HTCondor
    ("sched.cancelled", "slurmstepd: error: *** JOB 99 ON n1 CANCELLED AT 2024-05-06T07:08:09 DUE TO NODE FAILURE, "
                        "SEE SLURMCTLD LOG FOR DETAILS ***"),
    ("sched.preempted", "slurmstepd: error: *** JOB 77 ON n3 CANCELLED AT 2024-05-06T07:08:09 DUE TO PREEMPTION ***"),
    ("run.killed", "srun: error: gpu07: task 3: Killed"),
    ("sched.time_limit", "submitit WARNING (2024-05-06 07:08:09,000) - Job has timed out. Ran 1441 minutes out of "
                         "requested 1440 minutes."),
    ("run.signal", "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -15) local_rank: 0 (pid: 42) "
                   "of binary: /bin/python"),
    ("oom.host", "    State: Terminated, reason: OOMKilled, exit code: 137"),
    ("run.signal", "srun: error: gpu07: tasks 0-3: Terminated"),
    ("oom.host", "srun: error: gpu07: task 0: Out Of Memory"),
    ("run.native_crash", "Segmentation fault (core dumped)"),
    ("run.native_crash", "/var/spool/slurmd/job42/slurm_script: line 12: 4242 Segmentation fault      (core dumped) "
                         "python train.py"),
    ("run.native_crash", "Fatal Python error: Segmentation fault"),
    ("run.native_crash", "12-01 10:00:00 - ERROR - __main__ - Subprocess exited with code 3221226356"),  # heap
    ("run.native_crash", "Process finished with exit code -1073741819 (0xC0000005)"),  # access violation
    ("run.native_crash", "Aborted (core dumped)"),
    ("run.native_crash", "Bus error (core dumped)"),
    ("run.native_crash", "E0101 12:00:00 api.py:869] failed (exitcode: -11) local_rank: 2 (pid: 4242) of binary: "
                         "/bin/python"),
    ("run.native_crash", "*** SIGSEGV (@0x0) received by PID 4242 (TID 0x7f3a) from PID 0; stack trace: ***"),
]

START_UP_LINES = [  # a run that never starts: the config names what cannot be built
    ("run.instantiate_failed", "[2022-04-30 13:26:28,984][hydra.utils][ERROR] - Error instantiating "
                               "model_ssg.PointNet2SemSegSSG : No module named 'pointnet2_ops'"),
    ("run.instantiate_failed", "hydra.errors.InstantiationException: Error in call to target "
                               "'models.unet.UNet':"),
    ("run.instantiate_failed", "Error locating target 'src.models.MyNet', set env var HYDRA_FULL_ERROR=1 to see "
                               "chained exception."),
]


@pytest.mark.parametrize(("sig", "line"), ONE_LINERS + KILL_LINES + START_UP_LINES)
def test_each_signature_matches(sig: str, line: str) -> None:
    found = errors([line])
    assert [e.signature for e in found] == [sig]
    assert found[0].line == 1 and found[0].text == line.strip()


def test_every_brief_id_has_a_matching_line() -> None:
    covered = {s for s, _ in ONE_LINERS + KILL_LINES + START_UP_LINES} | {"run.child_failed"}
    assert covered == BRIEF_IDS


def test_a_warning_glued_to_a_bars_last_redraw_is_told_without_the_bar() -> None:
    """The library's warning printed over the bar with no line break: the event is the warning's (the work
    moved to the CPU), its text from the level word on."""
    bar = "  3/300   21.7G   1.204   0.913   1.1   37   640: 41% 412/1000 2.1it/s 3:15<4:40"
    found = errors([f"{bar}\r{bar}WARNING CUDA OutOfMemoryError in TaskAlignedAssigner, using CPU"])
    assert [e.signature for e in found] == ["oom.fallback"]
    assert found[0].text == "WARNING CUDA OutOfMemoryError in TaskAlignedAssigner, using CPU"


def test_oom_old_wording_figures_in_gib() -> None:
    (e,) = errors(["RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 1; 23.69 GiB total capacity; "
                   "21.50 GiB already allocated; 310.06 MiB free; 22.10 GiB reserved in total by PyTorch) If reserved "
                   "memory is >> allocated memory try setting max_split_size_mb"])
    assert e.signature == "oom.cuda"
    assert e.fields == pytest.approx({"tried_gib": 0.5, "total_gib": 23.69, "allocated_gib": 21.5,
                                      "free_gib": 310.06 / 1024, "reserved_gib": 22.1, "gpu": 1})


def test_oom_new_wording_figures_in_gib() -> None:
    (e,) = errors(["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity "
                   "of 79.11 GiB of which 1.02 GiB is free. Process 777 has 78.08 GiB memory in use. Of the allocated "
                   "memory 70.00 GiB is allocated by PyTorch, and 6.50 GiB is reserved by PyTorch but unallocated."])
    assert e.fields == pytest.approx({"tried_gib": 2.5, "total_gib": 79.11, "free_gib": 1.02,
                                      "allocated_gib": 70.0, "reserved_unallocated_gib": 6.5, "gpu": 0})


def test_paddles_gpu_out_of_memory_summary_is_a_cuda_oom_with_its_figures() -> None:
    """Paddle's `Error Message Summary` after a BadAlloc: `Out of memory error on GPU 0. Cannot allocate ..`
    (capital O: the keyword is shared with the lower-case wordings)."""
    (e,) = errors(["terminate called after throwing an instance of 'paddle::memory::allocation::BadAlloc'",
                   "ResourceExhaustedError: ", "",
                   "Out of memory error on GPU 0. Cannot allocate 1.220703GB memory on GPU 0, 30.787842GB memory "
                   "has been allocated and available memory is only 983.750000MB.", "",
                   "If the above ways do not solve the out of memory problem, you can try to use CUDA managed memory."])
    assert e.signature == "oom.cuda"
    assert e.fields == pytest.approx({"tried_gib": 1.220703, "in_use_gib": 30.787842,
                                      "available_gib": 983.75 / 1024, "gpu": 0})
    from trainwatch.rules.signature import describe
    assert describe("oom.cuda", e.fields) == "tried 1.22 GiB (30.79 GiB in use, 984 MiB available) on GPU 0"


def test_figures_of_the_new_signatures() -> None:
    (cpu,) = errors([ONE_LINERS[-9][1]])
    assert cpu.fields == {"tried_gib": 20.0}
    (abi,) = errors([ONE_LINERS[-13][1]])
    assert abi.fields == {"library": "flash_attn_2_cuda", "symbol": "_ZN3c104cuda9SetDeviceEi"}
    (comp,) = errors([ONE_LINERS[-12][1]])
    assert comp.fields == {"backend": "inductor"}
    (disk,) = errors([ONE_LINERS[-16][1]])
    assert disk.fields == {"file": "data/5", "rank": 0}


def test_instantiate_failure_names_the_target_and_the_reason() -> None:
    (e,) = errors([START_UP_LINES[0][1]])
    assert e.fields == {"target": "model_ssg.PointNet2SemSegSSG", "message": "No module named 'pointnet2_ops'"}
    (e,) = errors([START_UP_LINES[2][1]])
    assert e.fields["target"] == "src.models.MyNet"


@pytest.mark.parametrize("line", [
    "Error instantiating the optimizer failed twice, retrying",  # prose: no target, no colon after it
    "INFO: loading target 'cat' images",
])
def test_prose_about_instantiating_is_no_instantiate_failure(line: str) -> None:
    assert errors([line]) == []


def test_nccl_watchdog_fields() -> None:
    (e,) = errors([ONE_LINERS[4][1]])
    assert e.fields == {"timeout_ms": 600000.0, "ran_ms": 600042.0, "op": "ALLREDUCE", "rank": 1.0}


def test_fp16_overflow_loss_scale() -> None:
    assert errors([ONE_LINERS[13][1]])[0].fields["loss_scale"] == 16384.0
    assert errors(["  66%|######5   | 893/1352 [05:32<00:57,  7.92it/s]Gradient overflow.  Skipping step, loss "
                   "scaler 0 reducing loss scale to 32768.0"])[0].fields["loss_scale"] == 32768.0


CHILD = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\x20
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-08-01_01:06:47
  host      : node7
  rank      : 4 (local_rank: 4)
  exitcode  : {code} (pid: 208585)
  error_file: <N/A>
  traceback : {tb}
============================================================"""


@pytest.mark.parametrize(("code", "tb", "sig"), [
    ("-9", "Signal 9 (SIGKILL) received by PID 208585", "run.killed"),
    ("-7", "Signal 7 (SIGBUS) received by PID 208585", "deepspeed.exit7"),
    ("-15", "Signal 15 (SIGTERM) received by PID 208585", "run.signal"),
    ("1", "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", "run.child_failed"),
])
def test_child_failed_block_named_by_exit_code(code: str, tb: str, sig: str) -> None:
    found = errors(CHILD.format(code=code, tb=tb).split("\n") + ["next line"])
    assert [e.signature for e in found] == [sig]  # one event for the block, not one per line
    assert found[0].fields == {"exitcode": int(code), "rank": 4}
    assert found[0].line == 1


@pytest.mark.parametrize("line", [
    "logging_nan_inf_filter=True,",
    "WARNING:huggingface_hub.utils._http:'(ReadTimeoutError(\"HTTPSConnectionPool(host='hf.co', port=443): Read "
    "timed out. (read timeout=10)\"), '(Request ID: abc)')' thrown while requesting HEAD; Retrying in 1s [Retry 1/5].",
    "Generated: Let me check the algebra again: there is an error in the problem statement, so nan is not a number.",
    "The model ran out of memory ideas, said the poem; killed time; NCCL_DEBUG=INFO",
    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 4.4e-07, 'epoch': 0.0}",
    "error_file: <N/A>",
    "Setting `pad_token_id` to `eos_token_id`:None for open-end generation.",
    "exitcode 0, all good",
    "No space left in the batch, packing the next sample into a new sequence",
    "Compiling the model with torch.compile (backend inductor); the first steps will be slow",
    "[2024-05-01 10:00:00] loading flash_attn: symbols resolved",
    # torchvision warns and goes on; dynamo logs a compile failure it recovered from as a warning
    "/env/torchvision/io/image.py:13: UserWarning: Failed to load image Python extension: '/env/torchvision/image.so:"
    " undefined symbol: _ZN3c1017RegisterOperatorsD1Ev'If you don't plan on using image functionality from "
    "torchvision.io, you can ignore this warning.",
    "W1024 01:17:10.936000 140404233111360 torch/_dynamo/convert_frame.py:1009] "
    "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
    "2024-05-01 12:00:00,123 - WARNING - torch._dynamo.exc.Unsupported: graph break on data-dependent branch",
    # a launcher tearing down the other ranks after one crashed: an echo, never a cause
    "W0401 08:33:18.099000 139878200616768 torch/distributed/elastic/multiprocessing/api.py:858] Sending process "
    "310609 closing signal SIGTERM",
    "RuntimeError: DataLoader worker (pid 4020138) is killed by signal: Terminated.",
    "Registered a SIGTERM handler; the job will checkpoint when the scheduler stops it",
    "time_limit: 24:00:00  (the job is cancelled at the time limit)",
    "preempted: false",
    "Out of memory budget for the cache, evicting 3 entries",
    "srun: error: gpu07: task 1: Exited with exit code 1",  # one task of many: the traceback is the cause
    "Successfully completed.",  # LSF, a job that succeeded
    "Exit_status=0",
    "Training Aborted by user request, saving the last checkpoint",
    "Segmentation fault handler installed (faulthandler.enable())",
    "loaded 3221225477 tokens from shard 12; mean code length 3.2",  # a crash code's digits in other numbers
])
def test_prose_does_not_fire(line: str) -> None:
    assert errors([line]) == []


TB = [
    "Traceback (most recent call last):",
    '  File "/w/train.py", line 88, in <module>',
    "    main()",
    '  File "/w/train.py", line 70, in main',
    "    loss.backward()",
    "           ^^^^^^^^",
    "KeyError: 'labels'",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/w/train.py", line 90, in <module>',
    "    cleanup()",
    "RuntimeError: cleanup failed",
]


def test_chained_traceback_is_one_event() -> None:
    found = scan(["starting"] + TB + ["after the crash"])
    (tb,) = [e for e in found if e.kind == EventKind.TRACEBACK]
    assert tb.text.split("\n") == TB
    assert tb.line == 2
    assert tb.fields["exception"] == "RuntimeError" and tb.fields["message"] == "cleanup failed"
    assert tb.fields["frames"] == 3


def test_traceback_starting_mid_tqdm_line_and_with_rank_prefixes() -> None:
    lines = [" 12%|#2        | 30/250 [13:55<1:39:52, 27.24s/it]\rTraceback (most recent call last):",
             '[rank0]:   File "/w/train.py", line 5, in <module>',
             "[rank0]:     trainer.train()",
             "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.",
             "W0101 next log line"]
    found = scan(lines)
    (tb,) = [e for e in found if e.kind == EventKind.TRACEBACK]
    assert tb.text.startswith("Traceback (most recent call last):\n  File")
    assert tb.fields["exception"] == "OutOfMemoryError"
    assert [e.signature for e in found if e.kind == EventKind.ERROR] == ["oom.cuda"]


def test_log_ending_mid_traceback_still_emits_it() -> None:
    found = scan(TB[:5])
    (tb,) = [e for e in found if e.kind == EventKind.TRACEBACK]
    assert tb.fields["complete"] is False and tb.fields["frames"] == 2


def test_huge_traceback_is_capped() -> None:
    lines = ["Traceback (most recent call last):"]
    for i in range(5000):
        lines += [f'  File "/w/m{i}.py", line {i}, in f{i}', "    f()"]
    lines += ["RecursionError: maximum recursion depth exceeded", "done"]
    (tb,) = [e for e in scan(lines) if e.kind == EventKind.TRACEBACK]
    assert len(tb.text) < 100_000 and "lines left out" in tb.text
    assert tb.text.endswith("RecursionError: maximum recursion depth exceeded")
    assert tb.fields["frames"] == 5000


def test_keyboard_interrupt_then_second_traceback() -> None:
    lines = ["Traceback (most recent call last):", '  File "a.py", line 1, in <module>', "KeyboardInterrupt",
             "Exception ignored in atexit callback: <function _exit at 0x7f>",
             "Traceback (most recent call last):", '  File "b.py", line 2, in _exit', "KeyboardInterrupt:"]
    tbs = [e for e in scan(lines) if e.kind == EventKind.TRACEBACK]
    assert [t.fields["exception"] for t in tbs] == ["KeyboardInterrupt", "KeyboardInterrupt"]
    assert [t.line for t in tbs] == [1, 5]


def test_real_torchrun_failure_example() -> None:
    from pathlib import Path

    log = Path(__file__).resolve().parents[2] / "examples" / "runs" / "ddp_rank_failure" / "torchrun.log"
    if not log.exists():
        pytest.skip("no example run yet")
    found = scan(log.read_text(encoding="utf-8", errors="replace").split("\n"))
    child = [e for e in found if e.kind == EventKind.ERROR and e.signature == "run.child_failed"]
    assert len(child) == 1
    # the root cause, not the first failure listed; the sibling torchrun terminated is only mentioned
    assert child[0].fields == {"exitcode": 1, "rank": 1, "other_failures": "rank 0 exit -15"}
    assert not [e for e in found if e.signature in ("oom.host", "run.signal")]  # SIGTERM of a sibling is no cause
    assert [e.fields["exception"] for e in found if e.kind == EventKind.TRACEBACK] == ["ChildFailedError"]


def test_other_output_between_two_frames_is_not_taken_for_the_exception() -> None:
    """DeepSpeed prints `Loading extension module utils...` from another rank in the middle of a
    traceback: the traceback goes on to its real exception line."""
    lines = ["Traceback (most recent call last):",
             '  File "train.py", line 10, in <module>',
             "Loading extension module utils...",
             "    trainer.train()",
             '  File "trainer.py", line 99, in train',
             "    loss.backward()",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]
    tbs = [e for e in scan(lines + [""]) if e.kind is EventKind.TRACEBACK]
    assert len(tbs) == 1 and tbs[0].fields["exception"].endswith("OutOfMemoryError")


def test_other_streams_block_between_header_and_first_frame_is_not_the_exception() -> None:
    """A console capture joins stderr's traceback header (glued to a progress bar) and a block of stdout's
    metric dicts before the frames: no line there is the exception (Python prints a frame first), so the
    traceback goes on to its frames and its real exception line."""
    dicts = [f"{{'loss': 0.{60 - n}, 'grad_norm': 1.2, 'learning_rate': 9e-07, 'epoch': 0.{n:02d}}}"
             for n in range(20)]
    lines = [" 42%|####      | 829/1954 [28:49<39:13,  2.09s/it]Traceback (most recent call last):",
             *dicts,
             '  File "train.py", line 293, in <module>',
             "    train(config)",
             '  File "trainer.py", line 2527, in _inner_training_loop',
             "    and (torch.isnan(tr_loss_step) or torch.isinf(tr_loss_step))",
             "KeyboardInterrupt"]
    tbs = [e for e in scan(lines + [""]) if e.kind is EventKind.TRACEBACK]
    assert [(e.fields["exception"], e.fields["frames"]) for e in tbs] == [("KeyboardInterrupt", 2)]


def test_keywords_stay_within_the_scanners_simd_prefilter() -> None:
    """Past 64 long keywords in one scanner (signatures' and a format's own together), the native
    keyword pass loses its SIMD prefilter and every log reads markedly slower: signatures share keywords."""
    from trainwatch import adapters
    from trainwatch.adapters.signatures import trigger_keywords

    sig = {k for k in trigger_keywords() if len(k) > 2}
    own = max(len({k for k in getattr(adapters.get(name)("x"), "chunk_keywords", ()) if len(k) > 2} - sig)
              for name in adapters.registry())
    assert len(sig) + own <= 64
