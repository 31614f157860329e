"""Family `types`: the data model push_cache is called with (enums, element sizes, keys, descs, exceptions)."""

from conformance_tests.suite.family import family_test

test_clause = family_test("types")
