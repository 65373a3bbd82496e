"""Over SSH, as on a remote training node: a real sshd on loopback, a real ssh client in a real
terminal (tmux), and the dashboard running on the far side of the connection.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui.terminal import TMUX, WRITER, Tmux

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "logs" / "hf_high_lr.log"
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
SSH = shutil.which("ssh")
KEYGEN = shutil.which("ssh-keygen")
pytestmark = pytest.mark.skipif(
    not (TMUX and SSHD and SSH and KEYGEN and os.geteuid() == 0 and LOG.is_file()),
    reason="needs tmux, an OpenSSH server and client, root (to run sshd) and examples/logs")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"sshd exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)  # polling interval while sshd binds its port
    raise AssertionError("sshd did not start listening")


@pytest.fixture()
def sshd(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A throwaway sshd on 127.0.0.1 that accepts one freshly made key, and nothing else."""
    d = tmp_path / "ssh"
    d.mkdir(mode=0o700)
    for name in ("host", "client"):
        subprocess.run([KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    os.chmod(d / "authorized_keys", 0o600)
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    port = _free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host'}\nPidFile {d / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
        "StrictModes no\nUsePAM no\nAcceptEnv TERM\n")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.PIPE)
    try:
        _wait_port(port, proc)
        yield port, d / "client"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_dashboard_over_ssh_shows_the_alert_and_quits_cleanly(tmp_path: Path, sshd: tuple[int, Path]) -> None:
    port, key = sshd
    log = tmp_path / "train.log"
    log.write_text("".join(LOG.read_text(encoding="utf-8").splitlines(keepends=True)[:4]), encoding="utf-8")
    status = tmp_path / "status"
    remote = (f"cd {ROOT} && env TERM=xterm-256color PYTHONPATH={ROOT} {sys.executable} -m trainwatch tail "
              f"--no-gpu {log}")
    ssh = (f"{SSH} -tt -i {key} -p {port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
           f"-o LogLevel=ERROR -o BatchMode=yes root@127.0.0.1 '{remote}'")
    tm = Tmux("xterm-256color", tmp_path / "tmux.conf")
    tm("new-session", "-d", "-s", "tw", "-x", "120", "-y", "40", "sh", "-c",
       f"{ssh}; echo $? > {status}.tmp && mv {status}.tmp {status}; sleep 120")
    try:
        tm.wait_for(lambda t: "trainwatch" in t and "quit" in t, 40, "the TUI to start over ssh")
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(LOG), str(log), "4", "0.1"])
        try:
            tm.wait_for(lambda t: "/60 " in t, 40, "a step from the appended lines")
            tm.wait_for(lambda t: "CRITICAL" in t, 40, "a critical alert")
        finally:
            writer.wait(timeout=60)
        tm("send-keys", "-t", "tw", "q")
        tm.wait_for(lambda t: status.exists(), 30, "ssh to return")
        assert status.read_text().strip() == "2"  # ssh passes on the dashboard's code: the worst severity seen
        assert tm("display-message", "-p", "-t", "tw", "#{alternate_on}").strip() == "0"
    finally:
        tm("kill-server")
