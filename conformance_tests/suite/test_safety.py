"""Family `safety`: memory safety — guard bytes around the destination, stride mismatches, freed caches."""

from conformance_tests.generate import family_test

test_clause = family_test("safety")
