"""Family `config`: engine options that change what push_cache does (llm.SyncKvCacheWaitTime units and default)."""

from conformance_tests.suite.family import family_test

test_clause = family_test("config")
