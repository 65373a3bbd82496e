"""The real NVML backend and sampler with pynvml's functions substituted: readings, unsupported
calls (one notice, no crash), missing NVML, and a GPU that falls off the bus (critical alert)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from trainwatch.engine import Engine
from trainwatch.model import AlertState, Severity
from trainwatch.sources.gpu import GpuSampler
from trainwatch.sources.nvml import NvmlBackend

from .conftest import FakeClock

GIB = 1 << 30


class FakeNvml:
    """Two devices; device 1 has no power readout and no ECC; `lost` makes a device fall off the bus."""

    def __init__(self) -> None:
        self.lost: set[int] = set()
        self.util = [88, 12]

    def install(self, mp: pytest.MonkeyPatch) -> None:
        h = lambda handle: handle  # noqa: E731
        mp.setattr(pynvml, "nvmlInit", lambda: None)
        mp.setattr(pynvml, "nvmlShutdown", lambda: None)
        mp.setattr(pynvml, "nvmlDeviceGetCount", lambda: 2)
        mp.setattr(pynvml, "nvmlDeviceGetHandleByIndex", lambda i: i)
        mp.setattr(pynvml, "nvmlDeviceGetName", lambda i: ["NVIDIA H100 80GB HBM3", "NVIDIA L4"][h(i)])
        mp.setattr(pynvml, "nvmlDeviceGetUtilizationRates",
                   lambda i: self._alive(i) or SimpleNamespace(gpu=self.util[i], memory=40))
        mp.setattr(pynvml, "nvmlDeviceGetMemoryInfo",
                   lambda i: self._alive(i) or SimpleNamespace(used=60 * GIB, total=80 * GIB, free=20 * GIB))
        mp.setattr(pynvml, "nvmlDeviceGetTemperature", lambda i, kind: self._alive(i) or 65)
        mp.setattr(pynvml, "nvmlDeviceGetPowerUsage", lambda i: self._alive(i) or self._power(i))
        mp.setattr(pynvml, "nvmlDeviceGetEnforcedPowerLimit", lambda i: self._alive(i) or 700_000)
        mp.setattr(pynvml, "nvmlDeviceGetClockInfo", lambda i, kind: self._alive(i) or 1980)
        mp.setattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", lambda i: self._alive(i) or 0x40)
        mp.setattr(pynvml, "nvmlDeviceGetTotalEccErrors", lambda i, kind, counter: self._alive(i) or self._ecc(i))
        mp.setattr(pynvml, "nvmlDeviceGetRetiredPages", lambda i, cause: self._alive(i) or self._pages(i))
        mp.setattr(pynvml, "nvmlDeviceGetMigMode", lambda i: self._nomig())

    def _alive(self, i: int) -> Any:
        if i in self.lost:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        return None

    def _power(self, i: int) -> int:
        if i == 1:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return 612_000

    def _ecc(self, i: int) -> int:
        if i == 1:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return 0

    def _pages(self, i: int) -> list[int]:
        self._ecc(i)
        return []

    def _nomig(self) -> Any:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    fake = FakeNvml()
    fake.install(monkeypatch)
    return fake


def test_readings_become_series(nvml: FakeNvml, engine: Engine, clock: FakeClock) -> None:
    notices: list[str] = []
    sampler = GpuSampler(NvmlBackend(), clock=clock, notice=notices.append)
    assert sampler.open()
    engine.feed_all(sampler.sample())
    util = engine.store.get("gpu0/util", "gpu")
    assert util is not None and util.last is not None and util.last.value == 88
    assert engine.store.get("gpu0/mem_total", "gpu").last.value == 80 * 1024  # MiB
    assert engine.store.get("gpu0/power", "gpu").last.value == pytest.approx(612.0)  # W
    assert engine.store.get("gpu0/power_limit", "gpu").last.value == pytest.approx(700.0)
    assert engine.store.get("gpu0/sm_clock", "gpu").last.value == 1980
    assert engine.store.get("gpu1/util", "gpu").last.value == 12
    assert engine.store.get("gpu1/power", "gpu") is None  # not supported there
    devices = {d["key"]: d for d in sampler.devices()}
    assert devices["gpu1"]["name"] == "NVIDIA L4" and "power" not in devices["gpu1"]
    assert engine.sources["gpu"].facts["gpu_count"] == 2


def test_unsupported_call_is_one_notice(nvml: FakeNvml) -> None:
    notices: list[str] = []
    sampler = GpuSampler(NvmlBackend(), notice=notices.append)
    assert sampler.open()
    for _ in range(5):
        sampler.sample()
    power = [n for n in notices if "power draw" in n]
    assert power == [n for n in notices if n.startswith("gpu1: power draw")] and len(power) == 1
    assert all(n.startswith("gpu1") for n in notices)  # device 0 supports everything


def test_missing_nvml_is_one_info_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail() -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", fail)
    notices: list[str] = []
    sampler = GpuSampler(NvmlBackend(), notice=notices.append)
    assert sampler.open() is False
    assert len(notices) == 1 and notices[0].startswith("no GPU telemetry: NVML not available")


def test_no_gpu_is_one_info_line(nvml: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pynvml, "nvmlDeviceGetCount", lambda: 0)
    notices: list[str] = []
    assert GpuSampler(NvmlBackend(), notice=notices.append).open() is False
    assert notices == ["no GPU telemetry: NVML sees no GPU"]


def test_gpu_lost_mid_run_is_critical(nvml: FakeNvml, engine: Engine, clock: FakeClock) -> None:
    sampler = GpuSampler(NvmlBackend(), clock=clock)
    assert sampler.open()
    changes = []
    engine.listeners.append(changes.append)
    engine.feed_all(sampler.sample())
    nvml.lost.add(1)
    for _ in range(3):
        clock.advance(1)
        engine.feed_all(sampler.sample())
    lost = [c.alert for c in changes if c.alert.rule == "gpu.lost" and c.state is AlertState.FIRING]
    assert len(lost) == 1
    assert lost[0].severity is Severity.CRITICAL and "gpu1" in lost[0].finding.message
    # the healthy device keeps reporting
    assert len(engine.store.get("gpu0/util", "gpu").recent) == 4
    assert {d["key"]: d for d in sampler.devices()}["gpu1"]["lost"] is True


def test_gpus_command_table(nvml: FakeNvml, capsys: pytest.CaptureFixture[str]) -> None:
    from trainwatch.cli import main

    assert main(["gpus"]) == 0
    out = capsys.readouterr()
    assert "[gpu0] NVIDIA H100 80GB HBM3" in out.out and "hw_thermal" in out.out
    assert "[gpu1] NVIDIA L4" in out.out
    assert main(["gpus", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert [g["key"] for g in data["gpus"]] == ["gpu0", "gpu1"]
