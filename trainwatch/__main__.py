"""`python -m trainwatch` runs the command line."""

from trainwatch.cli import main

raise SystemExit(main())
