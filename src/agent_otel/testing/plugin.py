"""pytest plugin: registered under the ``pytest11`` entry point so users get the fixtures."""
