"""Family `remote`: the remote side — links, unknown caches, remote batch and layer bounds."""

from conformance_tests.generate import family_test

test_clause = family_test("remote")
