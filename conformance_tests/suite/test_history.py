"""Family `history`: the stateful suite — histories of the backend's operations, every push judged by its clause."""

from conformance_tests.suite.family import family_test

test_clause = family_test("history")
