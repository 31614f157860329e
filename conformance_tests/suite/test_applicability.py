"""Family `applicability`: which products push_cache is documented for (must where both pages support the
product, a `may` envelope where they do not)."""

from conformance_tests.suite.family import family_test

test_clause = family_test("applicability")
