"""What the views read: the dashboard (tui/) and the Prometheus exporter (sinks/prometheus.py) both draw from
a Snapshot of the engine taken here, so neither imports the other and neither loads Textual to read it."""
