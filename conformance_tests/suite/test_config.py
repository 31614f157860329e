"""Family `config`: engine options that change what push_cache does (llm.SyncKvCacheWaitTime units and default)."""

from conformance_tests.generate import family_test

test_clause = family_test("config")
