"""Family `applicability`: which products push_cache is documented for (a `may` envelope)."""

from conformance_tests.suite.family import family_test

test_clause = family_test("applicability")
