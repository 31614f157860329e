"""Family `timeout`: sync_kv_timeout, slow transfers, dropped links and dead peers (fault injection)."""

from conformance_tests.suite.family import family_test

test_clause = family_test("timeout")
