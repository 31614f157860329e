"""Family `order`: which error wins when several arguments are bad (vendor order) (data-driven from the spec's cases)."""

from conformance_tests.suite.family import family_test

test_clause = family_test("order")
