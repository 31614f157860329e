"""Family `restriction`: documented restrictions and layer-range rules (data-driven from the spec's cases)."""

from conformance_tests.generate import family_test

test_clause = family_test("restriction")
