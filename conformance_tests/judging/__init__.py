"""Judging a call: the push judged as a value, the bytes the oracle expects, what the call changed, the differences
found, the verdict on one call (``judge``), a live signature against the spec's, and the features a push is
described by for the likely-cause analysis."""
