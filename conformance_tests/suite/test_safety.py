"""Family `safety`: memory safety — guard bytes around the destination, stride mismatches, freed caches."""

from conformance_tests.suite.family import family_test

test_clause = family_test("safety")
