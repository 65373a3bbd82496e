"""trainwatch: watches a training run and says what is going wrong, when, and what to try first."""

from __future__ import annotations

from trainwatch.model import Alert, Event, Finding, Sample, Severity

__version__ = "0.1.0"
__all__ = ["Alert", "Event", "Finding", "Sample", "Severity", "__version__"]
