"""Remote logs over a real SSH connection: a throwaway sshd on loopback, the system ssh client, and
`trainwatch stream` (or `tail -F` where trainwatch is not on the node's PATH) on the far side.

The node is this machine: the "installed" sshd puts the test's virtual environment first on the PATH
of its sessions, the "bare" one gives them only /usr/bin:/bin.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from trainwatch.sources import remote

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "examples" / "logs" / "hf_high_lr.log"
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
SSH = shutil.which("ssh")
KEYGEN = shutil.which("ssh-keygen")
BIN = Path(sys.executable).parent
needs_sshd = pytest.mark.skipif(
    not (SSHD and SSH and KEYGEN and os.geteuid() == 0 and (BIN / "trainwatch").exists()),
    reason="needs an OpenSSH server and client, root (to run sshd) and trainwatch installed in this environment")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(cond: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)  # polling interval of the condition, under a deadline
    raise AssertionError(f"timed out waiting for {what}")


class Node:
    """A throwaway sshd and an ssh config naming it `twnode` and `twtwin` (two nodes, for the client), with
    the client's key, the port, and no known_hosts."""

    def __init__(self, d: Path, path_env: str) -> None:
        d.mkdir(mode=0o700)
        for name in ("host", "client", "stranger"):
            subprocess.run([KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
        (d / "authorized_keys").write_text((d / "client.pub").read_text())
        Path("/run/sshd").mkdir(exist_ok=True)
        self.port = _free_port()
        (d / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {d / 'host'}\nPidFile {d / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {d / 'authorized_keys'}\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
            f"StrictModes no\nUsePAM no\nSetEnv PATH={path_env}\n")
        common = ("  HostName 127.0.0.1\n  User root\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                  "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
        self.config = d / "ssh_config"
        self.config.write_text(f"Host twnode twtwin\n  Port {self.port}\n  IdentityFile {d / 'client'}\n{common}"
                               f"Host twstranger\n  Port {self.port}\n  IdentityFile {d / 'stranger'}\n{common}"
                               f"Host twclosed\n  Port {_free_port()}\n  IdentityFile {d / 'client'}\n{common}")
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.PIPE)
        wait_for(self._listening, 15, "sshd to listen")

    def _listening(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"sshd exited: {self.proc.stderr.read().decode() if self.proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def env(self) -> dict[str, str]:
        return dict(os.environ, TRAINWATCH_SSH_COMMAND=f"ssh -F {self.config}")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture()
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Node]:
    node = Node(tmp_path / "ssh-installed", f"{BIN}:/usr/bin:/bin")
    monkeypatch.setenv("TRAINWATCH_SSH_COMMAND", f"ssh -F {node.config}")
    yield node
    node.close()


@pytest.fixture()
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Node]:
    node = Node(tmp_path / "ssh-bare", "/usr/bin:/bin")
    monkeypatch.setenv("TRAINWATCH_SSH_COMMAND", f"ssh -F {node.config}")
    yield node
    node.close()


def _lines() -> list[str]:
    return LOG.read_text(encoding="utf-8").split("\n")[:-1]


def _watch(path: str) -> object:
    """A watcher following `path`, recording the lost-contact alerts it tells (`told`)."""
    from trainwatch.alerts import AlertChange
    from trainwatch.live.watcher import Watcher

    w = Watcher([path], gpu=False, tick_interval=0.1)
    told: list[tuple[object, str, dict[str, object]]] = []

    def listen(c: AlertChange) -> None:
        if c.alert.rule == "remote.lost_contact":
            told.append((c.state, c.alert.finding.source, dict(c.alert.finding.evidence)))

    w.add_listener(listen)
    w.told = told  # type: ignore[attr-defined]
    w.start()
    return w


def _received(w: object, name: str) -> list[tuple[int, str]]:
    return w.recent_lines(name, 10_000)  # type: ignore[attr-defined, no-any-return]


def _contact_alerts(w: object) -> list[tuple[str, str, dict[str, object]]]:
    """The lost-contact alerts the watcher's engine told its listeners: (state, source, evidence)."""
    return list(w.told)  # type: ignore[attr-defined]


def _exported_alerts(w: object) -> set[tuple[str, ...]]:
    """The trainwatch_alerts series the Prometheus exporter would serve now."""
    from trainwatch.sinks.prometheus import Collector

    fams = {f.name: f for f in Collector(w).collect()}
    return {(s.labels["alertname"], s.labels["severity"], s.labels["state"], s.labels["source"])
            for s in fams["trainwatch_alerts"].samples}


def _follow_with_a_cut(tmp_path: Path) -> tuple[object, str, list[str]]:
    """Half the log, read over ssh; the connection killed; the lost-contact alert fires; the other half
    appended; the alert resolves once the connection is back. Returns the watcher."""
    from trainwatch.model import AlertState

    lines = _lines()
    half = len(lines) // 2
    log = tmp_path / "train.log"
    log.write_text("".join(t + "\n" for t in lines[:half]), encoding="utf-8")
    name = f"root@twnode:{log}"
    w = _watch(name)
    try:
        wait_for(lambda: len(_received(w, name)) >= half, 30, "the first half over ssh")
        feed = w._remote[0]  # type: ignore[attr-defined]
        procs = feed.processes
        assert procs, "an ssh process is running"
        assert not _contact_alerts(w)
        for p in procs:
            p.kill()  # the connection drops mid-run
        wait_for(lambda: _contact_alerts(w), 30, "the lost-contact alert")
        state, source, evidence = _contact_alerts(w)[0]
        assert (state, source) == (AlertState.FIRING, name)
        assert evidence["host"] == "root@twnode" and isinstance(evidence["since_last_line_s"], float)
        assert ("remote.lost_contact", "warning", "firing", name) in _exported_alerts(w)
        with log.open("a", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in lines[half:]))
        wait_for(lambda: len(_received(w, name)) >= len(lines), 60, "the second half after reconnecting")
        wait_for(lambda: len(_contact_alerts(w)) >= 2, 30, "the lost-contact alert to resolve")
        assert not any(a[0] == "remote.lost_contact" for a in _exported_alerts(w))
        assert [(st, src) for st, src, _ in _contact_alerts(w)] == [(AlertState.FIRING, name),
                                                                   (AlertState.RESOLVED, name)]
    except BaseException:
        w.stop()  # type: ignore[attr-defined]
        raise
    return w, name, lines


@needs_sshd
def test_stream_resumes_after_a_dropped_connection_without_losing_or_repeating_a_line(
        tmp_path: Path, installed: Node) -> None:
    w, name, lines = _follow_with_a_cut(tmp_path)
    try:
        got = _received(w, name)
        assert [n for n, _ in got] == list(range(1, len(lines) + 1))
        assert [t for _, t in got] == lines
        info = w.info_lines  # type: ignore[attr-defined]
        assert not any("lost contact" in t for t in info)  # an alert, not a notice
        assert any("connected again" in t for t in info)
        assert not any("tail -F" in t for t in info)  # trainwatch stream answered, no fallback
        with w.lock:  # type: ignore[attr-defined]
            fired = {a.rule for a in w.engine.alerts()}  # type: ignore[attr-defined]
            state = w.engine.sources[name]  # type: ignore[attr-defined]
        assert state.format == "hf_console" and state.lines == len(lines)
        assert fired, "the high-LR run raised alerts through the remote stream"
    finally:
        w.stop()  # type: ignore[attr-defined]


@needs_sshd
def test_without_trainwatch_on_the_node_tail_F_is_used_and_resumes_too(tmp_path: Path, bare: Node) -> None:
    w, name, lines = _follow_with_a_cut(tmp_path)
    try:
        got = _received(w, name)
        assert [n for n, _ in got] == list(range(1, len(lines) + 1))
        assert [t for _, t in got] == lines
        said = [t for t in w.info_lines if "tail -F" in t]  # type: ignore[attr-defined]
        assert len(said) == 1 and "not installed there" in said[0] and "no GPU" in said[0]
    finally:
        w.stop()  # type: ignore[attr-defined]


@needs_sshd
def test_headless_tail_of_a_remote_log_alerts_as_a_local_one(tmp_path: Path, installed: Node) -> None:
    log = tmp_path / "train.log"
    shutil.copy(LOG, log)
    local = subprocess.run([sys.executable, "-m", "trainwatch", "tail", "--headless", "--json", "--no-gpu", str(log)],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
    far = subprocess.run([sys.executable, "-m", "trainwatch", "tail", "--headless", "--json", "--no-gpu",
                          f"root@twnode:{log}"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env=installed.env())

    def alerts(out: str) -> list[tuple[str, object, str]]:
        objs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        return [(o["id"], o["step"], o["state"]) for o in objs if o.get("type") == "alert"]

    assert local.returncode == far.returncode == 2, far.stderr
    assert alerts(far.stdout) == alerts(local.stdout) and alerts(far.stdout)
    sources = {json.loads(line)["source"] for line in far.stdout.splitlines()
               if line.startswith("{") and json.loads(line).get("type") == "alert"}
    assert sources == {f"root@twnode:{log}"}


@needs_sshd
def test_headless_tail_tells_lost_contact_as_an_alert_and_exit_on_stops_on_it(tmp_path: Path, installed: Node) -> None:
    """The alert goes where every alert goes: a headless JSON line, --alert-log, and --exit-on warning, which
    ends tail with the warning's code once the connection is cut."""
    log = tmp_path / "train.log"
    log.write_text("".join(f"Step {i}: loss={2.5 - 0.01 * i:.2f}, lr=1e-4\n" for i in range(1, 11)))
    name = f"root@twnode:{log}"
    alert_log = tmp_path / "alerts.jsonl"
    out = tmp_path / "tail.out"
    with out.open("w") as f:
        tail = subprocess.Popen([sys.executable, "-m", "trainwatch", "tail", "--headless", "--json", "--no-gpu",
                                 "--daemon", "--status-every", "0.2", "--exit-on", "warning", "--alert-log",
                                 str(alert_log), name], stdout=f, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                                env=installed.env())
    try:
        def at_step_10() -> bool:
            objs = [json.loads(t) for t in out.read_text().splitlines() if t.endswith("}")]
            return any(s.get("source") == name and s.get("step") == 10 for o in objs if o.get("type") == "status"
                       for s in o.get("sources", []))

        wait_for(at_step_10, 60, "the ten lines over ssh")
        # ssh is started by the feed's own thread: each thread lists the children it started
        children = [c for t in Path(f"/proc/{tail.pid}/task").iterdir() for c in (t / "children").read_text().split()]
        ssh = [int(c) for c in children if Path(f"/proc/{c}/comm").read_text().strip() == "ssh"]
        assert ssh, children
        for pid in ssh:
            os.kill(pid, 9)  # the connection drops
        assert tail.wait(timeout=60) == 1, tail.stderr.read() if tail.stderr else ""
    finally:
        if tail.poll() is None:
            tail.kill()
            tail.wait()
    alerts = [json.loads(t) for t in out.read_text().splitlines() if t.endswith("}")]
    told = [a for a in alerts if a.get("type") == "alert" and a.get("id") == "remote.lost_contact"]
    assert len(told) == 1 and told[0]["source"] == name and told[0]["severity"] == "warning", alerts
    assert "lost contact with root@twnode (" in told[0]["message"]
    logged = [json.loads(t) for t in alert_log.read_text().splitlines()]
    assert [a["severity"] for a in logged if a["id"] == "remote.lost_contact"] == ["warning"]
    assert all(a["severity"] == "info" for a in logged if a["id"] != "remote.lost_contact")  # the cut tripped it


@needs_sshd
def test_check_reads_remote_paths_and_says_what_went_wrong_in_one_line(tmp_path: Path, installed: Node) -> None:
    log = tmp_path / "train.log"
    shutil.copy(LOG, log)

    def check(*paths: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", *paths], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path, env=installed.env())

    here, there = check(str(log)), check(f"root@twnode:{log}")
    assert here.returncode == there.returncode == 2, there.stderr
    doc_here, doc_there = json.loads(here.stdout), json.loads(there.stdout)
    assert [(f["id"], f["step"]) for f in doc_there["findings"]] == [(f["id"], f["step"]) for f in doc_here["findings"]]
    assert [s["path"] for s in doc_there["sources"]] == [f"root@twnode:{log}"]

    glob = check(f"ssh://root@twnode{tmp_path}/tr*.log")
    assert glob.returncode == 2 and json.loads(glob.stdout)["sources"][0]["path"] == f"root@twnode:{log}"

    for target, words in ((f"root@twnode:{tmp_path}/missing.log", "no such file on twnode"),
                          (f"root@twstranger:{log}", "cannot connect: root@127.0.0.1: Permission denied"),
                          (f"root@twclosed:{log}", "cannot connect: ssh: connect to host 127.0.0.1")):
        bad = check(target)  # with --json the one line is a JSON object on stdout, and stderr stays empty
        assert bad.returncode == 3 and bad.stderr == "", bad.stderr
        assert len(bad.stdout.splitlines()) == 1 and words in json.loads(bad.stdout)["error"], bad.stdout


UNREADABLE = Path("/proc/sys/vm/compact_memory")  # write-only, even for root: a file the node cannot read


def _unreadable() -> bool:
    try:
        UNREADABLE.open("rb").close()
    except PermissionError:
        return True
    except OSError:
        return False
    return False


needs_unreadable = pytest.mark.skipif(not _unreadable(), reason=f"needs {UNREADABLE} to refuse reading")


@needs_sshd
@needs_unreadable
def test_check_of_a_remote_file_it_may_not_read_is_one_line(tmp_path: Path, installed: Node) -> None:
    r = subprocess.run([sys.executable, "-m", "trainwatch", "check", f"root@twnode:{UNREADABLE}"], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path, env=installed.env())
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr.splitlines() == [f"trainwatch: error: root@twnode:{UNREADABLE}: cannot read on twnode: "
                                     f"cat: {UNREADABLE}: Permission denied"], r.stderr


@needs_sshd
@needs_unreadable
def test_bad_remote_paths_beside_a_good_one_are_one_line_each_and_stop_nothing(tmp_path: Path, installed: Node) -> None:
    """One tail of four remote paths: a good log, a file the node may not read, a login refused and a
    closed port. The good log is followed to its end; each of the others is said once, however often
    it is retried."""
    from trainwatch.live.watcher import Watcher

    lines = _lines()
    log = tmp_path / "train.log"
    log.write_text("".join(t + "\n" for t in lines), encoding="utf-8")
    good = f"root@twnode:{log}"
    w = Watcher([good, f"root@twnode:{UNREADABLE}", f"root@twstranger:{log}", f"root@twclosed:{log}"], gpu=False,
                tick_interval=0.1)
    w.start()
    try:
        wait_for(lambda: len(_received(w, good)) >= len(lines), 60, "the good log")
        said = {"denied": f"{UNREADABLE}: cannot read (Permission denied)",
                "refused": "root@twstranger: cannot connect", "closed": "root@twclosed: cannot connect"}
        wait_for(lambda: all(any(s in t for t in w.info_lines) for s in said.values()), 60, "a line for each")
        assert all(f._threads[0].is_alive() for f in w._remote)  # each still trying, with backoff
        assert all(sum(s in t for t in w.info_lines) == 1 for s in said.values()), w.info_lines
        assert [n for n, _ in _received(w, good)] == list(range(1, len(lines) + 1))
        with w.lock:
            assert w.engine.sources[good].format == "hf_console"
    finally:
        w.stop()


@pytest.mark.parametrize("target", ["-oProxyCommand=touch pwned:/x.log", "ssh://-oProxyCommand=touch {tmp}/pwned",
                                    "root@-oProxyCommand=touch pwned:/x.log", "no;touch pwned:/x.log",
                                    "a b@host:/x.log", "host$(touch pwned):/x.log", "ho\x1bst:/x.log"])
@pytest.mark.parametrize("command", ["tail", "check"])
def test_a_hostile_host_string_is_refused_before_ssh_runs(tmp_path: Path, target: str, command: str) -> None:
    target = target.replace("{tmp}", str(tmp_path))
    args = [sys.executable, "-m", "trainwatch", command] + (["--headless", "--no-gpu"] if command == "tail" else [])
    r = subprocess.run([*args, "--", target], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 3
    assert len(r.stderr.splitlines()) == 1 and "refused" in r.stderr, r.stderr
    assert not (tmp_path / "pwned").exists()


def test_remote_paths_are_parsed_and_quoted_for_the_far_shell() -> None:
    rp = remote.parse("ssh://me@node7:2222/data/run's/rank*.log")
    assert (rp.user, rp.host, rp.port, rp.path) == ("me", "node7", 2222, "/data/run's/rank*.log")
    argv = remote.ssh_argv(rp, remote.list_command(rp))
    assert argv[-3:-1] == ["--", "me@node7"] and "BatchMode=yes" in argv and argv[argv.index("-p") + 1] == "2222"
    assert "'/data/run'\"'\"'s/rank'*.log" in argv[-1]  # quoted, with the glob left to the far shell
    assert remote.looks_remote("node:/x.log") and remote.looks_remote("ssh://node/x.log")
    assert not remote.looks_remote("./a:b.log") and not remote.looks_remote("out/rank*.log")


def _next_line(stream: object) -> dict[str, object]:
    """The next line record of a stream, past heartbeats and notices."""
    while True:
        msg = json.loads(stream.readline())  # type: ignore[attr-defined]
        if "line" in msg:
            return msg  # type: ignore[no-any-return]


def test_stream_writes_a_handshake_then_lines_with_offsets_and_resumes_from_one(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntwo\nthr")
    p = subprocess.Popen([sys.executable, "-m", "trainwatch", "stream", "--no-gpu", str(tmp_path / "*.log")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        hello = json.loads(p.stdout.readline())
        assert hello["trainwatch_stream"] == 1 and hello["version"]
        got = [_next_line(p.stdout) for _ in range(2)]
        assert [(m["lineno"], m["line"], m["offset"]) for m in got] == [(1, "one", 4), (2, "two", 8)]
    finally:
        p.kill()
        p.wait()
    resumed = subprocess.Popen([sys.executable, "-m", "trainwatch", "stream", "--no-gpu", "--resume",
                                json.dumps({str(log): [4, 1]}), str(log)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert resumed.stdout is not None
        resumed.stdout.readline()
        with log.open("ab") as f:
            f.write(b"ee\n")
        first = _next_line(resumed.stdout)
        assert (first["lineno"], first["line"], first["offset"]) == (2, "two", 8)
        second = _next_line(resumed.stdout)
        assert (second["lineno"], second["line"], second["offset"]) == (3, "three", 14)
        assert resumed.stdin is not None
        resumed.stdin.close()  # the client went away: the stream ends by itself
        assert resumed.wait(timeout=30) == 0
    finally:
        resumed.kill()
        resumed.wait()


def test_gpu_records_survive_the_trip_as_json() -> None:
    from trainwatch.model import Event, EventKind, Sample
    from trainwatch.sources.stream_protocol import record_from_json, record_to_json

    records = [Sample("gpu0/util", 97.0, step=3, time=1.5, source="gpu"),
               Event(EventKind.ERROR, source="gpu", signature="gpu.lost", text="gpu0 is lost", fields={"gpu": "gpu0"})]
    assert [record_from_json(json.loads(json.dumps(record_to_json(r)))) for r in records] == records


TRACES = Path(__file__).resolve().parent / "live" / "traces"


@needs_sshd
def test_gpus_of_two_nodes_stay_apart_in_the_store_the_dashboard_and_the_exporter(
        tmp_path: Path, installed: Node) -> None:
    """Two nodes through two stream connections, each replaying its own GPU trace: a busy pair of GPUs on
    twnode, one idle GPU on twtwin. Their gpu0s are two devices everywhere, named with the host."""
    from trainwatch.live.watcher import Watcher
    from trainwatch.model import GPU_SOURCE
    from trainwatch.sinks.prometheus import Collector
    from trainwatch.tui.widgets.gpu_panel import render_gpus
    from trainwatch.view import snapshot as view

    stand_in = tmp_path / "trainwatch-with-traces"  # the nodes' trainwatch, with recorded GPUs instead of NVML
    stand_in.write_text(f'#!/bin/sh\ncommand="$1"; shift\ncase "$*" in *idle.log*) trace={TRACES}/idle_stalled.jsonl;;'
                        f' *) trace={TRACES}/healthy.jsonl;; esac\n'
                        f'exec {BIN / "trainwatch"} "$command" --gpu-replay "$trace" --gpu-interval 0.1 "$@"\n')
    stand_in.chmod(0o755)
    for name in ("busy.log", "idle.log"):
        (tmp_path / name).write_text("".join(t + "\n" for t in _lines()[:20]), encoding="utf-8")
    w = Watcher([f"root@twnode:{tmp_path / 'busy.log'}", f"root@twtwin:{tmp_path / 'idle.log'}"],
                tick_interval=0.1, remote_trainwatch=str(stand_in))
    w.start()
    try:
        def series() -> dict[str, float]:
            with w.lock:
                return {s.name: s.last.value for s in w.engine.store
                        if s.source == GPU_SOURCE and s.name.endswith("/util") and s.last is not None}

        wait_for(lambda: len(series()) == 3, 60, "the GPUs of both nodes")
        util = series()
        assert sorted(util) == ["gpu0@twnode/util", "gpu0@twtwin/util", "gpu1@twnode/util"]
        assert util["gpu0@twnode/util"] > 90 and util["gpu0@twtwin/util"] == 0
        devices = {d["key"]: d for d in w.gpu_devices()}
        assert sorted(devices) == ["gpu0@twnode", "gpu0@twtwin", "gpu1@twnode"]
        assert devices["gpu0@twtwin"]["name"] == "NVIDIA H100 80GB HBM3" and devices["gpu0@twtwin"]["util"] == 0

        snap = view.take(w, selected=None, log_source=None)  # type: ignore[arg-type]
        panel = render_gpus(snap.gpus, {m.name: m for m in snap.metrics}, snap.info_lines, 120).plain
        assert [row.split()[0] for row in panel.splitlines()] == ["gpu0@twnode", "gpu1@twnode", "gpu0@twtwin"]
        fams = {f.name: f for f in Collector(w).collect()}
        exported = {s.labels["gpu"]: s.value for s in fams["trainwatch_gpu_utilization_percent"].samples}
        assert sorted(exported) == ["0@twnode", "0@twtwin", "1@twnode"] and exported["0@twtwin"] == 0
    finally:
        w.stop()


@needs_sshd
def test_tail_says_what_is_wrong_once_and_keeps_trying(tmp_path: Path, installed: Node) -> None:
    log = tmp_path / "later.log"
    lines = _lines()
    missing, closed = f"root@twnode:{log}", f"root@twclosed:{log}"
    w = _watch(missing)
    w2 = _watch(closed)
    try:
        info = w.info_lines  # type: ignore[attr-defined]
        wait_for(lambda: any("no such file yet; waiting" in t for t in info), 30, "the missing-file notice")
        log.write_text("".join(t + "\n" for t in lines), encoding="utf-8")  # appears later: followed from there
        wait_for(lambda: len(_received(w, missing)) >= len(lines), 30, "the file once it exists")
        assert [n for n, _ in _received(w, missing)] == list(range(1, len(lines) + 1))
        info2 = w2.info_lines  # type: ignore[attr-defined]
        wait_for(lambda: any("cannot connect" in t for t in info2), 30, "the connection error")
        feed = w2._remote[0]  # type: ignore[attr-defined]
        assert feed._threads[0].is_alive()  # still trying, with backoff
        assert sum("cannot connect" in t for t in info2) == 1  # said once, however often it is tried
    finally:
        w.stop()  # type: ignore[attr-defined]
        w2.stop()  # type: ignore[attr-defined]
