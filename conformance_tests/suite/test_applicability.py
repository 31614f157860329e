"""Family `applicability`: which products push_cache is documented for (a `may` envelope)."""

from conformance_tests.generate import family_test

test_clause = family_test("applicability")
