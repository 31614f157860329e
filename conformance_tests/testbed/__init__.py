"""One scenario opened on a backend: the testbed (cluster, nodes, caches, guard bands), how its caches are made and
its push's arguments built, the push itself, the memory-safety watch, the call log, and the harness's own error."""
