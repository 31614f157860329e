"""The model of one history: the nodes, links and caches the history made, what each link has seen, and which
situation a push is in (the spec's ``history`` situations).  Plain data; nothing here talks to a backend.

A cache is *visible* over a link when it existed before the link was made (the documentation asks to register
memory before linking; facts §6), otherwise it was made after the link, before or after the first push attempt
over it (``created_after_link``, ``created_after_first_push``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ...testbed.testbed import CacheInfo


class NodeState:
    """One node of the history (a plain class: a history prints it as its short form)."""

    def __init__(self, index: int, name: str, cluster_id: int, role: str, timeout_ms: int,
                 options: dict[str, str]) -> None:
        self.index = index
        self.name = name  # its name in the call log: n0, n1, ...
        self.cluster_id = cluster_id
        self.role = role
        self.timeout_ms = timeout_ms  # llm.SyncKvCacheWaitTime
        self.options = options
        self.alive = True  # False once a kill_node fault hit it (its memory can no longer be observed)
        self.faulty = False  # a delay or a dropped link injected on it and not cleared yet

    def __repr__(self) -> str:
        return f"{self.name}(cluster {self.cluster_id}, {self.role}, {self.timeout_ms} ms)"


@dataclass
class LinkState:
    made: int  # the moment (World.tick) it was made
    first_push: int | None = None  # the moment of the first push over it
    #: a push over it timed out, or met a fault, since it was made: the next valid push over it is judged by the
    #: clause of ``after_timeout`` (and any other push makes the link again first: a vendor fails fast until then)
    faulted: bool = False
    #: a transfer that could time out went over it since it was made (under a fault on its client, or a budget
    #: its bytes may need): the next valid transfer makes it again first, whether or not one did time out (that
    #: is timing, and what a history draws next must not turn on it); ``faulted`` implies it
    at_risk: bool = False
    #: a transfer its clause lets succeed could have timed out over it (at_risk, where a success was allowed):
    #: whether ``faulted`` is set is timing from then on, and so is any clause chosen by it
    undecided: bool = False
    #: its client and server (what a rule that draws it from the machine's bundle acts on)
    ends: tuple[NodeState, NodeState] | None = None
    current: bool = True  # False once unlinked (a bundle may still hold it)

    @property
    def usable(self) -> bool:
        """Still linked, both ends alive."""
        return self.current and self.ends is not None and all(n.alive for n in self.ends)


class CacheState:
    """One cache the history made, live or freed."""

    def __init__(self, info: CacheInfo, node: int, created: int, registered: bool, remote_accessible: bool,
                 cache_id: int, layers_of: int = 0, shift: int = 0, host: NodeState | None = None,
                 can_free: bool = True, model_id: int | None = None) -> None:
        self.info = info
        self.model_id = model_id  # a blocks cache's: its BlocksCacheKey's model_id (None: a contiguous cache)
        self.node = node
        self.host = host  # its node (what a rule that draws it from the machine's bundle checks is alive)
        self.can_free = can_free  # the backend has the call that frees it (registered: unregister_cache)
        self.created = created  # the moment (World.tick) it was made
        self.registered = registered
        self.remote_accessible = remote_accessible
        self.cache_id = cache_id
        self.layers_of = layers_of  # the tensors per layer it was made for (a real model's K and V)
        self.shift = shift  # where its contents' special patterns start (a rewrite shifts them)
        self.freed = False

    def __repr__(self) -> str:
        return f"{self.name}(n{self.node}, {self.num_tensors}x{list(self.info.shape)} {self.info.data_type})"

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def live(self) -> bool:
        """Not freed, on a node still alive."""
        return not self.freed and (self.host is None or self.host.alive)

    @property
    def blocks(self) -> bool:
        return self.model_id is not None

    @property
    def stride(self) -> int:
        return self.info.stride

    @property
    def num_tensors(self) -> int:
        return self.info.num_tensors

    @property
    def batch(self) -> int:
        return self.info.batch


@dataclass
class World:
    nodes: list[NodeState] = field(default_factory=list)
    links: dict[tuple[int, int], LinkState] = field(default_factory=dict)
    ever_linked: set[tuple[int, int]] = field(default_factory=set)
    caches: list[CacheState] = field(default_factory=list)
    clock: int = 0
    waited_ms: int = 0  # what the injected delays of this history cost so far

    def tick(self) -> int:
        """The next moment: every link made, cache made and push gets its own, in the order they happen."""
        self.clock += 1
        return self.clock

    # ---- queries -----------------------------------------------------------------------------------------

    def alive(self) -> list[NodeState]:
        return [n for n in self.nodes if n.alive]

    def live(self, node: int | None = None, *, blocks: bool | None = None) -> list[CacheState]:
        """Caches not freed (on ``node``; of one kind where ``blocks`` says: blocks caches or contiguous ones)."""
        return [c for c in self.caches if not c.freed and (node is None or c.node == node)
                and (blocks is None or c.blocks == blocks)]

    def freed(self, node: int | None = None, *, blocks: bool | None = None) -> list[CacheState]:
        return [c for c in self.caches if c.freed and (node is None or c.node == node)
                and (blocks is None or c.blocks == blocks)]

    def usable_links(self) -> list[tuple[int, int]]:
        """Links whose both ends are alive."""
        return [p for p in self.links if self.nodes[p[0]].alive and self.nodes[p[1]].alive]

    def unlinked_pairs(self) -> list[tuple[int, int]]:
        """Ordered pairs of live nodes with no link between them (in that direction)."""
        alive = [n.index for n in self.alive()]
        return [(a, b) for a in alive for b in alive if a != b and (a, b) not in self.links]

    def never_linked(self) -> list[tuple[int, int]]:
        """Unlinked pairs (:meth:`unlinked_pairs`) never linked in this history."""
        return [p for p in self.unlinked_pairs() if p not in self.ever_linked]

    def relinkable(self) -> list[tuple[int, int]]:
        """Unlinked pairs that were linked once (and unlinked since)."""
        return [p for p in self.unlinked_pairs() if p in self.ever_linked]

    def model_ids_on(self, node: int) -> set[int]:
        """Every model_id a blocks cache of this node was ever bound to (live or freed)."""
        return {c.model_id for c in self.caches if c.node == node and c.model_id is not None}

    def ids_on(self, node: int) -> set[int]:
        """Every cache id this node ever handed out (live or freed)."""
        return {c.cache_id for c in self.caches if c.node == node}

    def sources(self, node: int, *, blocks: bool | None = None) -> Iterator[CacheState]:
        """Live caches a push may read: open to remote access (a local cache that is not is a should matter); of
        one kind where ``blocks`` says."""
        return (c for c in self.live(node, blocks=blocks) if c.remote_accessible)

    def visibility(self, link: tuple[int, int], dst: CacheState) -> str:
        """``valid`` when ``dst`` existed before the link was made, else the situation it was made in."""
        state = self.links[link]
        if dst.created < state.made:
            return "valid"
        if state.first_push is not None and dst.created > state.first_push:
            return "created_after_first_push"
        return "created_after_link"

    def pushed_over(self, link: tuple[int, int]) -> None:
        """A push went over ``link`` (whatever its outcome: a refused one may have synced the remote table too, and
        either reading leaves the later caches' situations may-level)."""
        state = self.links.get(link)
        if state is not None and state.first_push is None:
            state.first_push = self.tick()
