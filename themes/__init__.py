"""Theme files for the TUI, shipped in the wheel as the package trainwatch.themes."""
