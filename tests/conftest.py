"""Suite-wide settings: the property tests' search budget (tests/examples.py) applies to every test,
those that name no example count included."""

import tests.examples  # noqa: F401  (registers and loads the hypothesis profile)
