"""Family `param`: each parameter's accepted types and domains (data-driven from the spec's cases)."""

from conformance_tests.suite.family import family_test

test_clause = family_test("param")
