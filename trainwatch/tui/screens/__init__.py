"""Modal screens: help, alert detail, metric zoom."""
