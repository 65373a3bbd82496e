"""The base of formats read as one JSON document (trainer_state.json, a dumped Keras history): the
whole file is parsed again on every change, since a writer rewrites it rather than appending."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar

from trainwatch.adapters.base import Adapter
from trainwatch.model import Record


class JsonDocumentAdapter(Adapter):
    """A `whole_file` format whose file is one JSON value: subclasses read records from the parsed value."""

    whole_file: ClassVar[bool] = True

    def parse_document(self, text: str) -> Iterable[Record]:
        try:
            data = json.loads(text)
        except ValueError:
            return []  # caught half-written (the writer rewrites the file): the next change brings a whole one
        return self.records(data)

    @abstractmethod
    def records(self, data: Any) -> list[Record]:
        """The records of the parsed document that were not given for an earlier version of it."""
