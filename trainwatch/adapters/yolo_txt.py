"""YOLOv3/YOLOv5's legacy `results.txt`: one whitespace-separated row per epoch and no header.

Before Ultralytics wrote results.csv, its train.py appended a row per epoch: `epoch/last_epoch`,
GPU memory (`1.93G`), the train box/objectness/class losses and their total, the label count, the
image size, precision, recall, two mAP figures, then the validation box/objectness/class losses.
The column meanings are fixed by position (the headerless file says nothing else), so a line is only
read when it has exactly that shape: the `i/n` epoch, a memory figure, and thirteen numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from trainwatch.adapters.base import Adapter
from trainwatch.model import Event, EventKind, Record, Sample

ROW = re.compile(r"^\s*(\d+)/(\d+)\s+(\d+(?:\.\d+)?[KMG]?)"
                 r"((?:\s+(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|[-+]?inf)){13})\s*$", re.I)
# positions in the thirteen numbers after the memory figure, and the names they are read under
TRAIN_PARTS = {0: "train/box_loss", 1: "train/obj_loss", 2: "train/cls_loss"}
TRAIN_TOTAL = 3
VAL_PARTS = {10: "val/box_loss", 11: "val/obj_loss", 12: "val/cls_loss"}
METRICS = {6: "precision", 7: "recall", 8: "mAP50"}  # the next column is mAP50-95 in v5, F1 in v3
SCORE_MIN_ROWS = 3


class YoloTxtAdapter(Adapter):
    name = "yolo_txt"
    description = "YOLOv3/v5 legacy results.txt (headerless rows: epoch/total, GPU memory, losses, P, R, mAP)"
    task_hint = "vision"
    example = ("      3/29     1.93G   0.09035   0.09901         0    0.1894        32       416   0.02915    0.4043"
               "   0.03057  0.006599    0.0959   0.07846         0")

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.total: int | None = None

    @classmethod
    def score(cls, head: str, path: str) -> float:
        lines = [ln for ln in head.split("\n")[:200] if ln.strip()]
        if not lines:
            return 0.0
        rows = sum(1 for ln in lines if ROW.match(ln))
        if rows < min(SCORE_MIN_ROWS, len(lines)):
            return 0.0
        return 0.9 * rows / len(lines)

    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        m = ROW.match(line)
        if m is None:
            return ()
        epoch, last = int(m.group(1)), int(m.group(2))
        nums = [float(x) for x in m.group(4).split()]
        out: list[Record] = []
        if self.total != last:
            self.total = last  # epochs run from 0 to `last`, and the epoch is the step
            out.append(Event(EventKind.PROGRESS, self.source, lineno, step=epoch,
                             fields={"step": epoch, "total": self.total}))
        out.append(Sample("loss", nums[TRAIN_TOTAL], epoch, None, self.source, lineno, False))
        out.extend(Sample(name, nums[i], epoch, None, self.source, lineno, False) for i, name in TRAIN_PARTS.items())
        out.append(Sample("eval_loss", sum(nums[i] for i in VAL_PARTS), epoch, None, self.source, lineno, False))
        out.extend(Sample(name, nums[i], epoch, None, self.source, lineno, False) for i, name in VAL_PARTS.items())
        out.extend(Sample(name, nums[i], epoch, None, self.source, lineno, False) for i, name in METRICS.items())
        return out
