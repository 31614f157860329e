"""Family `signature`: parameters, order, defaults, return value (inspect.signature and real calls)."""

from conformance_tests.suite.family import family_test

test_clause = family_test("signature")
