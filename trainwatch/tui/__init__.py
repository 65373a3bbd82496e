"""The Textual front end. Only this package (and cli/demo.py, lazily) imports textual."""
