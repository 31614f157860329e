"""Family `restriction`: documented restrictions and layer-range rules (data-driven from the spec's cases)."""

from conformance_tests.suite.family import family_test

test_clause = family_test("restriction")
