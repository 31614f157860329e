"""Worked examples for the push_cache conformance kit."""
