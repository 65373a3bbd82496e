"""Theme files for the TUI, shipped as the package trainwatch.themes (the top-level themes/ folder links here)."""
