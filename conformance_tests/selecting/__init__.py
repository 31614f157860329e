"""Which tests a run holds: the suite's collection from the spec, why a command line selects less than all of it,
shards, the expectations file's waivers, and ``--failed-from``."""
