"""Family `timeout`: sync_kv_timeout, slow transfers, dropped links and dead peers (fault injection)."""

from conformance_tests.generate import family_test

test_clause = family_test("timeout")
