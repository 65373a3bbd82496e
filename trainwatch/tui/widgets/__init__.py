"""The TUI's panels, one module each; each renders from a view.Snapshot, never from the engine."""
