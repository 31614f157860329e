"""Fake backend module whose attribute lacks the protocol members."""

backend = object()
