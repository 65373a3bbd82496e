"""TensorBoard event files (`events.out.tfevents.*`), read with the tensorboard package's own loader.

The loader keeps its place in the file, so each `read_new` returns only the events appended since the
last one: a run is followed while it writes. Scalars come both as the old `simple_value` and as TF2 scalar
tensors (the loader migrates the former into the latter); histograms, images and text are not metrics
and are left out. tensorboard is an optional extra, `trainwatch[tensorboard]`, imported only here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainwatch.adapters.path_reader import PathAdapter
from trainwatch.errors import SourceError
from trainwatch.model import Record, Sample

FILE_PREFIX = "events.out.tfevents."  # the name every TensorBoard writer gives its event files
EXTRA_HINT = "install the extra: pip install 'trainwatch[tensorboard]'"


def is_event_file(path: Path) -> bool:
    return path.name.startswith(FILE_PREFIX) and path.is_file()


def _loader_class() -> Any:
    try:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    except ImportError:
        raise SourceError("TensorBoard event files need the tensorboard package", hint=EXTRA_HINT) from None
    return EventFileLoader


class TensorBoardAdapter(PathAdapter):
    name = "tensorboard"
    description = "TensorBoard event files (events.out.tfevents.*): scalars and TF2 scalar tensors"
    example = "events.out.tfevents.1700000000.host.1234.0 (binary; needs trainwatch[tensorboard])"

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self._loader: Any = None
        self._events = 0

    @classmethod
    def claims(cls, path: Path) -> bool:
        return is_event_file(path)

    def probe(self, path: Path) -> None:
        """A file with bytes but no readable record is not an event file (or is damaged at its start)."""
        loader = _loader_class()(str(path))
        try:
            first = next(iter(loader.Load()), None)
        except Exception as exc:  # the loader's own errors vary by version; any of them means unreadable
            raise SourceError(f"{path}: malformed TensorBoard event file ({type(exc).__name__})") from None
        if first is None and path.stat().st_size > 0:
            raise SourceError(f"{path}: malformed TensorBoard event file (no readable record)")

    def read_new(self, path: Path) -> list[Record]:
        if self._loader is None:
            self._loader = _loader_class()(str(path))
        out: list[Record] = []
        try:
            for event in self._loader.Load():
                self._events += 1
                out.extend(self._samples(event))
        except Exception as exc:  # a damaged record mid-file: what came before it stands
            raise SourceError(f"{path}: malformed TensorBoard event file after {self._events} events "
                              f"({type(exc).__name__})") from None
        return out

    def _samples(self, event: Any) -> list[Record]:
        if not event.HasField("summary"):
            return []
        step = int(event.step)
        when = float(event.wall_time) or None
        out: list[Record] = []
        for value in event.summary.value:
            number = _scalar(value)
            if number is not None:
                out.append(Sample(value.tag, number, step, when, self.source, 0, False))
        return out


def _scalar(value: Any) -> float | None:
    """The value of a scalar summary, or None for anything else (histograms, images, text, vectors)."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind != "tensor":
        return None
    from tensorboard.util import tensor_util

    try:
        array = tensor_util.make_ndarray(value.tensor)
    except Exception:  # a dtype the converter does not know: not a metric we can read
        return None
    if array.size != 1 or array.dtype.kind not in "fiu":
        return None
    return float(array.reshape(()))
