"""Exporting and viewing: ``configure()``, the exporters it builds, the terminal tree view.

The only layer that loads the OTel SDK, and the only one that may set global providers.
"""
