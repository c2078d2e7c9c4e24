"""Helpers shared by the test suite (servers, fixtures support)."""
