"""Test kits that plugins run against themselves (they import pytest).

- :mod:`avo.testing.stores` — the EventStore conformance suite.
"""
