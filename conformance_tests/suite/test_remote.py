"""Family `remote`: the remote side — links, unknown caches, remote batch and layer bounds."""

from conformance_tests.suite.family import family_test

test_clause = family_test("remote")
