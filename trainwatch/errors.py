"""The one family of errors the command line turns into a one-line message and exit code 3."""

from __future__ import annotations


class TrainwatchError(Exception):
    """An error the user can act on; `str()` is the whole message, hint included."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConfigError(TrainwatchError):
    """A preset or config file that cannot be used; the message names the file and key."""


class SourceError(TrainwatchError):
    """A path that cannot be read, or holds nothing trainwatch recognises."""


class UsageError(TrainwatchError):
    """Bad command-line arguments."""
