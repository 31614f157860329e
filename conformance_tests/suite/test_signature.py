"""Family `signature`: parameters, order, defaults, return value (inspect.signature and real calls)."""

from conformance_tests.generate import family_test

test_clause = family_test("signature")
