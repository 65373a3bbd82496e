"""The NVML backend (pynvml from nvidia-ml-py): one reading per visible GPU and MIG instance.

Every call is guarded: a call the device does not support drops that field and is said once; a
device that is lost (fallen off the bus) becomes a reading with lost=True, which the sampler turns
into a critical alert. pynvml is imported lazily so a machine without it still runs everything else.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from trainwatch.sources.gpu import Backend, GpuUnavailable

MIB = 1 << 20
_LOST_NAMES = ("NVMLError_GpuIsLost", "NVMLError_Unknown")


class NvmlBackend:
    def __init__(self) -> None:
        self.nv: Any = None
        self.handles: list[Any] = []
        self.names: list[str] = []
        self.unsupported: set[tuple[int, str]] = set()
        self.notices: list[str] = []  # drained by the sampler's caller through `take_notices`

    def open(self) -> list[str]:
        try:
            import pynvml as nv
        except ImportError:
            raise GpuUnavailable("no GPU telemetry: the pynvml module (nvidia-ml-py) is not installed") from None
        self.nv = nv
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            raise GpuUnavailable(f"no GPU telemetry: NVML not available ({_text(exc)})") from None
        try:
            count = nv.nvmlDeviceGetCount()
            self.handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except nv.NVMLError as exc:
            raise GpuUnavailable(f"no GPU telemetry: cannot list GPUs ({_text(exc)})") from None
        if not self.handles:
            raise GpuUnavailable("no GPU telemetry: NVML sees no GPU")
        self.names = [self._name(h, i) for i, h in enumerate(self.handles)]
        return list(self.names)

    def read(self) -> list[dict[str, Any]]:
        out = []
        for i, h in enumerate(self.handles):
            r: dict[str, Any] = {"index": i, "name": self.names[i]}
            try:
                self._fill(i, h, r)
                out.append(r)
                out.extend(self._mig(i, h))
            except _Lost as exc:
                out.append({"index": i, "name": self.names[i], "lost": True, "error": str(exc)})
        return out

    def take_notices(self) -> list[str]:
        out, self.notices = self.notices, []
        return out

    def close(self) -> None:
        if self.nv is not None:
            try:
                self.nv.nvmlShutdown()
            except Exception:
                pass

    # -- internals ------------------------------------------------------------------------------

    def _name(self, h: Any, i: int) -> str:
        try:
            name = self.nv.nvmlDeviceGetName(h)
        except self.nv.NVMLError:
            return f"GPU {i}"
        return name.decode() if isinstance(name, bytes) else str(name)

    def _call(self, i: int, field: str, fn: Callable[[], Any]) -> Any:
        """fn() or None when the device cannot say; a lost device raises _Lost."""
        nv = self.nv
        try:
            value = fn()
            if field == "retired pages":
                value = len(value)
            return value
        except nv.NVMLError as exc:
            if type(exc).__name__ in _LOST_NAMES:
                raise _Lost(_text(exc)) from None
            reason = _text(exc)
        except Exception as exc:  # a binding that answers in an unexpected shape: that field is lost, not the rest
            reason = f"{type(exc).__name__}: {exc}"
        if (i, field) not in self.unsupported:
            self.unsupported.add((i, field))
            self.notices.append(f"gpu{i}: {field} not available ({reason})")
        return None

    def _fill(self, i: int, h: Any, r: dict[str, Any]) -> None:
        nv = self.nv
        util = self._call(i, "utilisation", lambda: nv.nvmlDeviceGetUtilizationRates(h))
        if util is not None:
            r["util"] = float(util.gpu)
            r["mem_util"] = float(util.memory)
        mem = self._call(i, "memory", lambda: nv.nvmlDeviceGetMemoryInfo(h))
        if mem is not None:
            r["mem_used"] = mem.used / MIB
            r["mem_total"] = mem.total / MIB
        temp = self._call(i, "temperature", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        if temp is not None:
            r["temp"] = float(temp)
        power = self._call(i, "power draw", lambda: nv.nvmlDeviceGetPowerUsage(h))
        if power is not None:
            r["power"] = power / 1000.0
        limit = self._call(i, "power limit", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
        if limit is not None:
            r["power_limit"] = limit / 1000.0
        clock = self._call(i, "SM clock", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
        if clock is not None:
            r["sm_clock"] = float(clock)
        reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = self._call(i, "throttle reasons", lambda: reasons(h))
        if mask is not None:
            r["throttle"] = int(mask)
        for kind, key in ((nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, "ecc_corrected"),
                          (nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "ecc_uncorrected")):
            n = self._call(i, "ECC counts", partial(nv.nvmlDeviceGetTotalEccErrors, h, kind, nv.NVML_VOLATILE_ECC))
            if n is not None:
                r[key] = float(n)
        pages = self._call(i, "retired pages", lambda: nv.nvmlDeviceGetRetiredPages(
            h, nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR))
        if pages is not None:
            r["retired_pages"] = float(pages)

    def _mig(self, i: int, h: Any) -> list[dict[str, Any]]:
        nv = self.nv
        try:
            current, _pending = nv.nvmlDeviceGetMigMode(h)
        except nv.NVMLError:
            return []  # no MIG on this device: nothing to say
        if current != getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1):
            return []
        out = []
        try:
            n = nv.nvmlDeviceGetMaxMigDeviceCount(h)
        except nv.NVMLError:
            return []
        for m in range(n):
            try:
                mh = nv.nvmlDeviceGetMigDeviceHandleByIndex(h, m)
            except nv.NVMLError:
                continue  # an empty slot
            r: dict[str, Any] = {"index": i, "mig": m, "name": f"{self.names[i]} MIG {m}"}
            mem = self._call(i, f"MIG {m} memory", partial(nv.nvmlDeviceGetMemoryInfo, mh))
            if mem is not None:
                r["mem_used"] = mem.used / MIB
                r["mem_total"] = mem.total / MIB
            out.append(r)
        return out


class _Lost(Exception):
    pass


def _text(exc: Exception) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:
        return type(exc).__name__


def default_backend() -> Backend:
    """The backend for live telemetry; a machine without NVML gets GpuUnavailable from its open()."""
    return NvmlBackend()
