"""`tail --prometheus`: the exporter's own output, and a real Prometheus and Alertmanager on loopback.

The end-to-end test starts Debian's `prometheus` and `prometheus-alertmanager` binaries with temporary
configs and storage (never the system service), lets Prometheus scrape `trainwatch tail` following a
log that a real process appends to and that goes NaN, and reads the outcome through their HTTP APIs;
then stops trainwatch and sees the stale-exporter rule catch it.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from trainwatch import config
from trainwatch.engine import Engine
from trainwatch.model import Sample
from trainwatch.sinks import prometheus
from trainwatch.view.model import EngineModel

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "prometheus"
TRACE = Path(__file__).resolve().parent / "live" / "traces" / "healthy.jsonl"
PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
T = TypeVar("T")

# A training script's stand-in: healthy steps, then (told on stdin) NaN steps, then quiet until closed.
WRITER = """
import sys
def write(text):
    with open(sys.argv[1], "a", encoding="utf-8") as f:
        f.write(text)
        f.flush()
write("".join(f"Step {i}: loss={2.5 - 0.01 * i:.2f}, lr=1e-4\\n" for i in range(1, 6)))
print("healthy", flush=True)
sys.stdin.readline()
write("Step 6: loss=nan, lr=1e-4\\nStep 7: loss=nan, lr=1e-4\\n")
print("nan", flush=True)
sys.stdin.read()
"""


# -- helpers ---------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def poll(fetch: Callable[[], T | None], what: str, timeout: float = 60.0, procs: dict[str, Any] | None = None) -> T:
    """Calls `fetch` until it returns something, up to a deadline; says what was awaited, and what each
    process printed, when the deadline passes. Readiness is asked for, never slept on."""
    deadline = time.monotonic() + timeout
    tick = threading.Event()
    last_error = ""
    while True:
        try:
            got = fetch()
            if got is not None:
                return got
        except (OSError, ValueError) as exc:  # not listening yet, or a half-written answer
            last_error = f"{type(exc).__name__}: {exc}"
        if time.monotonic() > deadline:
            logs = {name: _tail(p) for name, p in (procs or {}).items()}
            raise AssertionError(f"timed out after {timeout}s waiting for {what} ({last_error}); logs: {logs}")
        tick.wait(0.2)


def _tail(proc: Any) -> str:
    path = getattr(proc, "log_path", None)
    return Path(path).read_text(errors="replace")[-1500:] if path and Path(path).exists() else ""


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        body = r.read().decode("utf-8")
    return json.loads(body) if "json" in r.headers.get("Content-Type", "") else body


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The exporter's /metrics, parsed by prometheus_client's own parser: {(name, labels): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(get(f"http://127.0.0.1:{port}/metrics")):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def scrape_when(port: int, ready: Callable[[dict[Any, float]], Any]) -> dict[Any, float] | None:
    samples = scrape(port)
    return samples if ready(samples) else None


def pick(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], family: str, /,
         **labels: str) -> list[tuple[dict[str, str], float]]:
    """The samples of one family whose labels include `labels`."""
    return [(dict(lab), v) for (n, lab), v in samples.items() if n == family and set(labels.items()) <= lab]


def start(cmd: list[str], log: Path, **kw: Any) -> subprocess.Popen[str]:
    with open(log, "w", encoding="utf-8") as f:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, **kw)
    proc.log_path = log  # type: ignore[attr-defined]
    return proc


@pytest.fixture
def procs() -> Iterator[dict[str, Any]]:
    """Every process a test starts, stopped (and reaped) when it ends, whatever happened."""
    started: dict[str, Any] = {}
    yield started
    for p in started.values():
        if p.poll() is None:
            p.terminate()
    for p in started.values():
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def tail_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "trainwatch", "tail", *args, "--headless", "--daemon"]


# -- the exporter alone ------------------------------------------------------------------------------

def test_tail_serves_metrics_alerts_progress_and_gpus(tmp_path: Path, procs: dict[str, Any]) -> None:
    run = tmp_path / "llama-sft"
    run.mkdir()
    log = run / "rank1.log"
    log.write_text("".join(f"Step {i}: loss={2.5 - 0.01 * i:.2f}, lr=1e-4\n" for i in range(1, 6)))
    port = free_port()
    procs["tail"] = start(tail_cmd(str(log), "--gpu-replay", str(TRACE), "--gpu-interval", "0.2",
                                   "--prometheus", str(port)), tmp_path / "tail.out", cwd=tmp_path)
    labels = {"run": "llama-sft", "source": str(log), "rank": "1"}
    first = poll(lambda: scrape_when(port, lambda m: pick(m, "trainwatch_step", **labels)
                                     and pick(m, "trainwatch_gpu_memory_total_bytes")),
                 "step 5 and the GPUs", procs=procs)
    assert pick(first, "trainwatch_step", **labels)[0][1] == 5
    assert pick(first, "trainwatch_metric", name="loss", **labels)[0][1] == pytest.approx(2.45)
    assert pick(first, "trainwatch_metric", name="lr", **labels)[0][1] == pytest.approx(1e-4)
    # a healthy run: no warning or critical series (an info finding, such as no LR warm-up, may be there)
    assert [lab for lab, _ in pick(first, "trainwatch_alerts") if lab["severity"] != "info"] == []
    assert pick(first, "trainwatch_run_ended", **labels)[0][1] == 0
    # GPU telemetry, in base units, labelled by device (the trace has two)
    gpus = pick(first, "trainwatch_gpu_memory_total_bytes")
    assert sorted(lab["gpu"] for lab, _ in gpus) == ["0", "1"]
    assert {v for _, v in gpus} == {81559 * 1024 * 1024}
    util = pick(first, "trainwatch_gpu_utilization_percent", gpu="0")
    assert util and 0 <= util[0][1] <= 100 and util[0][0]["name"] == "NVIDIA H100 80GB HBM3"

    subprocess.run([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'a'); f.write(sys.argv[2]); f.close()",
                    str(log), "Step 6: loss=2.40, lr=1e-4\nStep 7: loss=2.39, lr=1e-4\nStep 8: loss=nan, lr=1e-4\n"],
                   check=True)
    after = poll(lambda: scrape_when(port, lambda m: pick(m, "trainwatch_alerts", alertname="loss.nonfinite")),
                 "the NaN alert", procs=procs)
    alert = pick(after, "trainwatch_alerts", alertname="loss.nonfinite")
    assert alert and alert[0][1] == 1
    assert alert[0][0] == {"alertname": "loss.nonfinite", "severity": "critical", "state": "firing",
                           "source": str(log), "subject": "loss", "run": "llama-sft", "rank": "1"}
    assert math.isnan(pick(after, "trainwatch_metric", name="loss", **labels)[0][1])  # NaN is data, exported
    assert pick(after, "trainwatch_step", **labels)[0][1] == 8
    # two scrapes saw the step move on (5, then 8): a rate, and the time since the last new step
    rate = pick(after, "trainwatch_steps_per_second", **labels)
    assert rate and rate[0][1] > 0
    age = pick(after, "trainwatch_last_progress_age_seconds", **labels)
    assert age and 0 <= age[0][1] < 60
    assert procs["tail"].poll() is None


def stream_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "trainwatch", "stream", *args]


def test_stream_serves_the_node_s_own_metrics_alerts_and_gpus(tmp_path: Path, procs: dict[str, Any]) -> None:
    """`stream --prometheus` on a node, with no tail anywhere: scraped for real, and still serving with
    stdin at /dev/null (as a service has it), where only a client's pipe would stop a stream."""
    run = tmp_path / "pretrain-7b"
    run.mkdir()
    log = run / "rank0.log"
    log.write_text("".join(f"Step {i}: loss={3.0 - 0.01 * i:.2f}, lr=1e-4\n" for i in range(1, 5)))
    port = free_port()
    procs["stream"] = start(stream_cmd("--gpu-replay", str(TRACE), "--gpu-interval", "0.2", "--prometheus",
                                       f"127.0.0.1:{port}", str(run / "rank*.log")),
                            tmp_path / "stream.out", cwd=tmp_path, stdin=subprocess.DEVNULL)
    labels = {"run": "pretrain-7b", "source": str(log), "rank": "0"}
    first = poll(lambda: scrape_when(port, lambda m: pick(m, "trainwatch_step", **labels)
                                     and pick(m, "trainwatch_gpu_utilization_percent")),
                 "the node's steps and GPUs", procs=procs)
    assert pick(first, "trainwatch_step", **labels)[0][1] == 4
    assert pick(first, "trainwatch_metric", name="loss", **labels)[0][1] == pytest.approx(2.96)
    assert sorted(lab["gpu"] for lab, _ in pick(first, "trainwatch_gpu_memory_total_bytes")) == ["0", "1"]
    assert pick(first, "trainwatch_gpu_utilization_percent", gpu="0")[0][0]["name"] == "NVIDIA H100 80GB HBM3"

    with log.open("a", encoding="utf-8") as f:
        f.write("Step 5: loss=nan, lr=1e-4\n")
    after = poll(lambda: scrape_when(port, lambda m: pick(m, "trainwatch_alerts", alertname="loss.nonfinite")),
                 "the node's own NaN alert", procs=procs)
    assert pick(after, "trainwatch_alerts", alertname="loss.nonfinite")[0][0]["state"] == "firing"
    assert procs["stream"].poll() is None  # stdin was /dev/null: no client to lose, still serving

    def sent() -> list[dict[str, Any]] | None:  # the JSON lines go on as ever, for a client to read
        got = [json.loads(t) for t in (tmp_path / "stream.out").read_text().splitlines() if t.endswith("}")]
        return got if any(m.get("line") == "Step 5: loss=nan, lr=1e-4" for m in got) else None

    assert poll(sent, "the NaN line on stdout", procs=procs)[0]["trainwatch_stream"] == 1
    assert f"serving Prometheus metrics at http://127.0.0.1:{port}/metrics" in (tmp_path / "stream.out").read_text()


def test_resolved_alerts_leave_and_stopped_runs_rate_zero() -> None:
    """Through the Collector over a real engine and an injected clock: an alert is a series only while
    it fires, and a run with no new step for a whole rate window reads 0 steps/s."""
    now = [1_700_000_000.0]
    engine = Engine(config.load("sft"), clock=lambda: now[0])
    model = EngineModel(engine)
    collector = prometheus.Collector(model, clock=lambda: now[0])
    source = "out/run-b/train.log"

    def feed(step: int, loss: float) -> None:
        with model.lock:
            engine.feed(Sample("loss", loss, step=step, source=source))

    def families() -> dict[str, list[Any]]:
        return {f.name: f.samples for f in collector.collect()}

    for i in range(1, 6):
        now[0] += 1
        feed(i, 2.0 - 0.01 * i)
    families()
    now[0] += 1
    feed(6, float("nan"))
    firing = families()["trainwatch_alerts"]
    assert [(s.labels["alertname"], s.labels["run"], s.labels["rank"]) for s in firing] == \
        [("loss.nonfinite", "run-b", "")]
    for i in range(7, 40):  # finite again, past the rule's keep_firing_for
        now[0] += 1
        feed(i, 1.9)
    fams = families()
    assert fams["trainwatch_alerts"] == []
    assert fams["trainwatch_steps_per_second"][0].value == pytest.approx(1.0)
    now[0] += prometheus.RATE_WINDOW_S + 1
    fams = families()
    assert fams["trainwatch_steps_per_second"][0].value == 0.0
    assert fams["trainwatch_last_progress_age_seconds"][0].value == pytest.approx(prometheus.RATE_WINDOW_S + 1)


@pytest.mark.parametrize("command", ["tail", "stream"])
def test_port_in_use_is_one_line_and_exit_3(tmp_path: Path, command: str) -> None:
    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=2.0\n")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        flags = ("--no-gpu", "--prometheus", f"127.0.0.1:{port}")
        cmd = tail_cmd(str(log), *flags) if command == "tail" else stream_cmd(*flags, str(log))
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 3
    assert r.stderr.strip() == f"trainwatch: error: --prometheus 127.0.0.1:{port}: cannot listen: port already in use"
    assert r.stdout == ""  # nothing before the error: a stream client sees it fail, not a stream without a handshake


@pytest.mark.parametrize("value", ["nine", "70000", ":9188", "::1:9188"])
def test_bad_address_is_a_usage_error(tmp_path: Path, value: str) -> None:
    r = subprocess.run(tail_cmd("run.log", "--prometheus", value), capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert r.returncode == 3
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--prometheus" in lines[0] and "Traceback" not in r.stderr


def test_address_forms() -> None:
    assert prometheus.parse_address("9188") == ("127.0.0.1", 9188)
    assert prometheus.parse_address("0.0.0.0:9188") == ("0.0.0.0", 9188)
    assert prometheus.parse_address("[::1]:9188") == ("::1", 9188)
    assert prometheus.parse_address("node-3:0") == ("node-3", 0)


# -- the examples ------------------------------------------------------------------------------------

def _exprs() -> list[str]:
    rules = yaml.safe_load((EXAMPLES / "trainwatch.rules.yml").read_text())
    out = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    dash = json.loads((EXAMPLES / "grafana-dashboard.json").read_text())
    for p in dash["panels"]:
        out += [t["expr"] for t in p.get("targets", [])]
    out += [v["definition"] for v in dash["templating"]["list"] if "definition" in v]
    return out


def test_examples_use_only_the_exported_names() -> None:
    exprs = _exprs()
    used = {n for e in exprs for n in re.findall(r"\btrainwatch_\w+", e)}
    assert used and not used - set(prometheus.FAMILIES), f"not exported: {used - set(prometheus.FAMILIES)}"
    readme = (Path(__file__).resolve().parents[1] / "docs" / "remote.md").read_text(encoding="utf-8")
    missing = [n for n in prometheus.FAMILIES if f"`{n}`" not in readme]
    assert not missing, f"exporter families missing from docs/remote.md: {missing}"


@pytest.mark.skipif(not shutil.which("promtool") or not shutil.which("amtool"),
                    reason="promtool/amtool not installed (.ci/run installs Debian's prometheus and alertmanager)")
def test_examples_pass_promtool_and_amtool() -> None:
    for cmd in (["promtool", "check", "config", "prometheus.yml"], ["promtool", "check", "rules",
                                                                    "trainwatch.rules.yml"],
                ["amtool", "check-config", "alertmanager.yml"]):
        r = subprocess.run(cmd, cwd=EXAMPLES, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (cmd, r.stdout, r.stderr)


# -- Prometheus and Alertmanager for real -----------------------------------------------------------

def _query(prom: int, expr: str) -> list[dict[str, Any]]:
    answer = get(f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


@pytest.mark.skipif(PROMETHEUS is None, reason="the prometheus binary is not installed "
                                              "(.ci/run installs Debian's prometheus)")
@pytest.mark.skipif(ALERTMANAGER is None, reason="the alertmanager binary is not installed "
                                                "(.ci/run installs Debian's prometheus-alertmanager)")
def test_prometheus_scrapes_tail_and_alertmanager_gets_the_critical_alert(tmp_path: Path,
                                                                         procs: dict[str, Any]) -> None:
    run = tmp_path / "llama-sft"
    run.mkdir()
    log = run / "rank0.log"
    tw, prom, am = free_port(), free_port(), free_port()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    procs["writer"] = writer
    assert writer.stdout is not None and writer.stdin is not None
    assert writer.stdout.readline().strip() == "healthy"
    procs["trainwatch"] = start(tail_cmd(str(log), "--no-gpu", "--prometheus", f"127.0.0.1:{tw}"),
                                tmp_path / "trainwatch.out", cwd=tmp_path)
    (tmp_path / "am").mkdir()
    procs["alertmanager"] = start([str(ALERTMANAGER), f"--config.file={EXAMPLES / 'alertmanager.yml'}",
                                   f"--storage.path={tmp_path / 'am'}", f"--web.listen-address=127.0.0.1:{am}",
                                   "--cluster.listen-address="], tmp_path / "alertmanager.out")
    cfg = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
           "rule_files": [str(EXAMPLES / "trainwatch.rules.yml")],
           "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am}"]}]}]},
           "scrape_configs": [{"job_name": "trainwatch", "static_configs": [{"targets": [f"127.0.0.1:{tw}"]}]}]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(cfg))
    procs["prometheus"] = start([str(PROMETHEUS), f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom}"],
                                tmp_path / "prometheus.out")

    # the healthy run: the loss series with its labels, and no alert
    loss = 'trainwatch_metric{name="loss"}'
    series = poll(lambda: _query(prom, loss) or None, "the loss series in Prometheus", procs=procs)
    assert len(series) == 1
    lab = series[0]["metric"]
    assert (lab["run"], lab["source"], lab["rank"], lab["job"], lab["instance"]) == \
        ("llama-sft", str(log), "0", "trainwatch", f"127.0.0.1:{tw}")
    assert float(series[0]["value"][1]) == pytest.approx(2.45)
    assert _query(prom, 'ALERTS{alertname="TrainwatchCritical"}') == []
    assert _query(prom, f'trainwatch_step{{source="{log}"}}')[0]["value"][1] == "5"

    writer.stdin.write("go\n")
    writer.stdin.flush()
    assert writer.stdout.readline().strip() == "nan"

    firing = poll(lambda: _query(prom, 'ALERTS{alertname="TrainwatchCritical", alertstate="firing"}') or None,
                  "TrainwatchCritical firing in Prometheus", procs=procs)
    alert = firing[0]["metric"]
    assert (alert["trainwatch_alert"], alert["severity"], alert["subject"], alert["run"], alert["rank"],
            alert["source"]) == ("loss.nonfinite", "critical", "loss", "llama-sft", "0", str(log))
    assert _query(prom, loss)[0]["value"][1] == "NaN"  # the NaN itself reached Prometheus
    rules = get(f"http://127.0.0.1:{prom}/api/v1/rules")["data"]["groups"][0]["rules"]
    assert sorted(r["name"] for r in rules) == ["TrainwatchCritical", "TrainwatchExporterAbsent",
                                                "TrainwatchExporterDown", "TrainwatchWarning"]
    assert all(r["health"] == "ok" for r in rules), rules

    def received() -> dict[str, Any] | None:
        for a in get(f"http://127.0.0.1:{am}/api/v2/alerts"):
            if a["labels"].get("alertname") == "TrainwatchCritical":
                return a
        return None

    got = poll(received, "TrainwatchCritical in Alertmanager", procs=procs)
    assert got["labels"]["trainwatch_alert"] == "loss.nonfinite" and got["labels"]["run"] == "llama-sft"
    assert got["status"]["state"] == "active"
    assert [r["name"] for r in got["receivers"]] == ["pager"]  # the route pages on critical
    assert "loss.nonfinite in run llama-sft" in got["annotations"]["summary"]
    assert procs["trainwatch"].poll() is None

    # the watcher goes away: the stale-exporter rule sees `up == 0` (pending for its 2 minutes)
    procs["trainwatch"].terminate()
    assert procs["trainwatch"].wait(timeout=30) == 2  # the worst severity seen
    down = poll(lambda: _query(prom, 'ALERTS{alertname="TrainwatchExporterDown"}') or None,
                "TrainwatchExporterDown pending", procs=procs)
    assert down[0]["metric"]["alertstate"] == "pending" and down[0]["metric"]["instance"] == f"127.0.0.1:{tw}"
    writer.stdin.close()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux for a real terminal (.ci/run installs it)")
def test_dashboard_serves_metrics_and_frees_the_port_on_quit(tmp_path: Path) -> None:
    """With the dashboard drawn in a real terminal, the exporter answers; after `q` the port is free."""
    from tests.tui.terminal import Tmux

    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=2.5, lr=1e-4\nStep 2: loss=2.4, lr=1e-4\nStep 3: loss=nan, lr=1e-4\n")
    port = free_port()
    status = tmp_path / "status"
    root = Path(__file__).resolve().parents[1]
    tm = Tmux("xterm-256color", tmp_path / "tmux.conf")
    cmd = (f"cd {tmp_path} && env -u COLUMNS -u LINES TERM=xterm-256color PYTHONPATH={root} {sys.executable} "
           f"-m trainwatch tail --no-gpu {log} --prometheus {port}; echo $? > {status}.tmp && "
           f"mv {status}.tmp {status}; sleep 120")
    tm("new-session", "-d", "-s", "tw", "-x", "120", "-y", "40", "sh", "-c", cmd)
    try:
        got = poll(lambda: scrape_when(port, lambda m: pick(m, "trainwatch_alerts", alertname="loss.nonfinite")),
                   "the NaN alert from the dashboard's exporter")
        assert pick(got, "trainwatch_step", source=str(log))[0][1] == 3
        tm.wait_for(lambda t: "CRITICAL" in t, 40, "the dashboard's badge")
        tm("send-keys", "-t", "tw", "q")
        tm.wait_for(lambda t: status.exists(), 30, "the dashboard to exit")
        assert status.read_text().strip() == "2"
        with socket.socket() as s:  # closed with the dashboard: nothing listens there any more
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # scrapes leave TIME_WAIT, not a listener
            s.bind(("127.0.0.1", port))
            s.listen()
    finally:
        tm("kill-server")
