"""Domain coverage: the partitions of the domains the kit's pushes draw from and the pairs that matter, derived
from the spec's ``coverage`` section (``universe``), what one push or one concurrent pair of pushes reached
(``measure``), and a run's totals and unreached ones (``tally``)."""

from .measure import push_keys, relation_keys, relation_of
from .tally import tally
from .universe import Universe, universe

__all__ = ["Universe", "push_keys", "relation_keys", "relation_of", "tally", "universe"]
