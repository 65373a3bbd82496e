"""One source's parsing: ANSI codes and launcher prefixes stripped, the adapter's records, then error
signatures and tracebacks (the scanner reads the line as it was, prefixes included: ranks matter there)."""

from __future__ import annotations

from trainwatch.adapters.base import Adapter
from trainwatch.adapters.prefix import PrefixStripper
from trainwatch.adapters.signatures import SignatureScanner
from trainwatch.model import Record, Sample
from trainwatch.textsafe import strip_escapes


class SourceParser:
    """Turns one source's lines into records. Never raises on what the log holds."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self.source = adapter.source
        # every line of a text file is scanned whatever its format: a crash is printed as plain text
        # between the metric lines; a whole-file document (JSON) holds no such lines
        self.scanner = None if adapter.whole_file else SignatureScanner(adapter.source)
        self.errors = 0  # lines an adapter choked on (only third-party adapters should ever do this)
        self.prefixes = PrefixStripper() if adapter.strip_prefixes else None

    def feed(self, line: str, lineno: int) -> list[Record]:
        line = strip_escapes(line)
        text, prefix = (line, None) if self.prefixes is None else self.prefixes.strip(line)
        try:
            out = list(self.adapter.parse(text, lineno))
        except Exception:  # an adapter bug must cost one line, not the watcher
            self.errors += 1
            out = []
        if prefix is not None and prefix.time is not None and out:
            for r in out:  # the adapter saw the line without its timestamp: give the samples theirs
                if type(r) is Sample and r.time is None:
                    r.time = prefix.time
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
