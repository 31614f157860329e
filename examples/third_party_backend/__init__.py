"""AcmeKV: a small third-party push_cache backend plugged into the conformance kit (see README.md)."""
