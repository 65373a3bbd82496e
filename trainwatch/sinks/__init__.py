"""Where alerts go: the check report, the headless printer, the alert log, hooks; the TUI is one more."""
