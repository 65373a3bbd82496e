"""One source's parsing: ANSI codes stripped, the adapter's records, then error signatures and tracebacks."""

from __future__ import annotations

import re

from trainwatch.adapters.base import Adapter
from trainwatch.adapters.signatures import SignatureScanner
from trainwatch.model import Record

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")


class SourceParser:
    """Turns one source's lines into records. Never raises on what the log holds."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self.source = adapter.source
        # every line of a text file is scanned whatever its format: a crash is printed as plain text
        # between the metric lines; a whole-file document (JSON) holds no such lines
        self.scanner = None if adapter.whole_file else SignatureScanner(adapter.source)
        self.errors = 0  # lines an adapter choked on (only third-party adapters should ever do this)

    def feed(self, line: str, lineno: int) -> list[Record]:
        if "\x1b" in line:
            line = ANSI.sub("", line)
        try:
            out = list(self.adapter.parse(line, lineno))
        except Exception:  # an adapter bug must cost one line, not the watcher
            self.errors += 1
            out = []
        if self.scanner is not None:
            out.extend(self.scanner.feed(line, lineno))
        return out

    def document(self, text: str) -> list[Record]:
        try:
            return list(self.adapter.parse_document(text))
        except Exception:
            self.errors += 1
            return []

    def finish(self) -> list[Record]:
        out: list[Record] = []
        try:
            out.extend(self.adapter.finish())
        except Exception:
            self.errors += 1
        if self.scanner is not None:
            out.extend(self.scanner.finish())
        return out
