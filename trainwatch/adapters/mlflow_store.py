"""MLflow's file store: a run folder whose `metrics/` holds one file per metric of `timestamp value step` lines.

Read directly, with no mlflow import: the layout is MLflow's documented `mlruns/<experiment>/<run>/` tree
(`meta.yaml`, `metrics/`, `params/`, `tags/`). Metric names with slashes (`train/loss`) are nested folders
under `metrics/`. Each file is read from where the last call stopped, whole lines only, so a run that is
still logging is followed without repeating a value.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainwatch.adapters.path_reader import PathAdapter
from trainwatch.model import Record, Sample

META = "meta.yaml"
METRICS = "metrics"


def is_run_folder(path: Path) -> bool:
    """A run: a folder with MLflow's run metadata and a metrics folder beside it."""
    return path.is_dir() and (path / META).is_file() and (path / METRICS).is_dir()


class MlflowAdapter(PathAdapter):
    name = "mlflow"
    description = "MLflow file store run folders (mlruns/<exp>/<run>/metrics/<name>: timestamp value step)"
    example = "1700000000000 0.6931 10"

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self._offsets: dict[Path, int] = {}

    @classmethod
    def claims(cls, path: Path) -> bool:
        return is_run_folder(path)

    def read_new(self, path: Path) -> list[Record]:
        root = path / METRICS
        out: list[Record] = []
        for file in sorted(p for p in root.rglob("*") if p.is_file()):
            name = file.relative_to(root).as_posix()
            out.extend(self._read_file(file, name))
        out.sort(key=lambda r: (r.step if isinstance(r, Sample) and r.step is not None else 0))
        return out

    def _read_file(self, file: Path, name: str) -> list[Record]:
        start = self._offsets.get(file, 0)
        try:
            with open(file, "rb") as f:
                if os.fstat(f.fileno()).st_size < start:
                    start = 0  # rewritten from scratch (a run deleted and logged again)
                f.seek(start)
                data = f.read()
        except OSError:
            return []  # removed or unreadable between listing and reading: the next call tries again
        end = data.rfind(b"\n") + 1  # a line still being written waits for its newline
        self._offsets[file] = start + end
        out: list[Record] = []
        for line in data[:end].decode("utf-8", "replace").splitlines():
            sample = self._sample(name, line)
            if sample is not None:
                out.append(sample)
        return out

    def _sample(self, name: str, line: str) -> Sample | None:
        parts = line.split()
        if len(parts) < 2:
            return None
        try:
            stamp_ms = float(parts[0])
            value = float(parts[1])
            step = int(parts[2]) if len(parts) > 2 else None
        except ValueError:
            return None
        return Sample(name, value, step, stamp_ms / 1000.0, self.source, 0, step is None)
