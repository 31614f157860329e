"""Family `data`: what lands where.  Properties over random layouts (hypothesis) plus the spec's cases."""

from conformance_tests.suite.family import family_test

test_clause = family_test("data")
