"""W&B offline runs: the `.wandb` history file beside `files/output.log`.

The console output (`files/output.log`) is a text log and goes through the console adapters like any
other. The `.wandb` file is W&B's transaction log: a 7-byte header (`:W&B`, a magic number, a version),
then LevelDB-style log records in 32 KiB blocks (crc, length, fragment type, payload), each payload a
protobuf `Record` whose encoding only the wandb SDK ships. The framing is read here, the payload with the
SDK's own message class; without the SDK the history is named in the report as not read.
"""

from __future__ import annotations

import importlib
import json
import struct
from pathlib import Path
from typing import Any

from trainwatch.adapters.base import json_number
from trainwatch.adapters.path_reader import PathAdapter
from trainwatch.errors import SourceError
from trainwatch.model import Record, Sample

SUFFIX = ".wandb"
MAGIC = b":W&B"
FILE_HEADER = 7
BLOCK = 32 * 1024
RECORD_HEADER = 7  # crc32c (4), payload length (2, little-endian), fragment type (1)
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def is_history_file(path: Path) -> bool:
    return path.suffix == SUFFIX and path.is_file()


def _record_class() -> Any:
    """The SDK's protobuf Record class, or None without the SDK (imported only when a history is read)."""
    try:
        return importlib.import_module("wandb.proto.wandb_internal_pb2").Record
    except ImportError:
        return None


class WandbHistoryAdapter(PathAdapter):
    name = "wandb_history"
    description = "W&B offline run history (run-*.wandb), decoded with the wandb SDK when it is installed"
    example = "run-abc123.wandb (binary; needs the wandb SDK)"

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self._offset = FILE_HEADER
        self._pending = b""  # the fragments of a record split across blocks, until its last one

    @classmethod
    def claims(cls, path: Path) -> bool:
        return is_history_file(path)

    def probe(self, path: Path) -> None:
        if _record_class() is None:
            raise SourceError(f"{path}: history not read: install wandb")
        with open(path, "rb") as f:
            head = f.read(FILE_HEADER)
        if len(head) == FILE_HEADER and not head.startswith(MAGIC):
            raise SourceError(f"{path}: malformed W&B history file (no :W&B header)")

    def read_new(self, path: Path) -> list[Record]:
        cls = _record_class()
        if cls is None:
            return []
        with open(path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        out: list[Record] = []
        for payload in self._payloads(data):
            record = cls()
            try:
                record.ParseFromString(payload)
            except Exception:  # the SDK's DecodeError: a damaged record is skipped, the rest still read
                continue
            if record.WhichOneof("record_type") == "history":
                out.extend(self._samples(record.history))
        return out

    def _payloads(self, data: bytes) -> list[bytes]:
        """Whole records from `data` (read from `self._offset`); a record not wholly written yet waits."""
        out: list[bytes] = []
        pos = 0
        while True:
            left = BLOCK - (self._offset + pos) % BLOCK
            if left < RECORD_HEADER:  # the block's tail is padding
                if pos + left > len(data):
                    break
                pos += left
                continue
            if pos + RECORD_HEADER > len(data):
                break
            _crc, length, kind = struct.unpack_from("<IHB", data, pos)
            if pos + RECORD_HEADER + length > len(data):
                break
            payload = data[pos + RECORD_HEADER:pos + RECORD_HEADER + length]
            if kind == 0 and length == 0:  # zero fill to the end of the block
                pos += left
                continue
            pos += RECORD_HEADER + length
            if kind == FULL:
                out.append(payload)
                self._pending = b""
            elif kind == FIRST:
                self._pending = payload
            elif kind == MIDDLE:
                self._pending += payload
            elif kind == LAST:
                out.append(self._pending + payload)
                self._pending = b""
        self._offset += pos
        return out

    def _samples(self, history: Any) -> list[Record]:
        step = int(history.step.num) if history.HasField("step") else None
        values: dict[str, float] = {}
        for item in history.item:
            key = "/".join(item.nested_key) if item.nested_key else item.key
            try:
                number = json_number(json.loads(item.value_json))
            except ValueError:
                continue
            if number is not None:
                values[key] = number
        if step is None and "_step" in values:
            step = int(values["_step"])
        when = values.get("_timestamp")
        return [Sample(k, v, step, when, self.source, 0, False) for k, v in values.items() if not k.startswith("_")]
