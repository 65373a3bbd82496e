"""W&B offline runs: the `.wandb` history file beside `files/output.log`.

The console output (`files/output.log`) is a text log and goes through the console adapters like any
other. The `.wandb` file is W&B's own binary record stream; only the wandb SDK knows its encoding, so
without the SDK the run folder is still read through its console output, and the history file is named in
the report as not read.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from trainwatch.adapters.path_reader import PathAdapter
from trainwatch.errors import SourceError
from trainwatch.model import Record

SUFFIX = ".wandb"


def is_history_file(path: Path) -> bool:
    return path.suffix == SUFFIX and path.is_file()


class WandbHistoryAdapter(PathAdapter):
    name = "wandb_history"
    description = "W&B offline run history (run-*.wandb), through the wandb SDK when it is installed"
    example = "run-abc123.wandb (binary; needs the wandb SDK)"

    @classmethod
    def claims(cls, path: Path) -> bool:
        return is_history_file(path)

    def probe(self, path: Path) -> None:
        if importlib.util.find_spec("wandb") is None:
            raise SourceError(f"{path}: history not read: install wandb")
        raise SourceError(f"{path}: history not read: reading .wandb files through the SDK is not supported yet")

    def read_new(self, path: Path) -> list[Record]:
        return []
