"""How a history makes what it pushes between: caches (allocated, or registered raw memory at uneven offsets, filled
with drawn contents, rewritten) and links, in the backend and in the model at once."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from ...spec import CacheSpec
from . import draws
from .bed import HistoryBed
from .pushes import HistoryRun
from .world import CacheState, LinkState, NodeState, World


class Making:
    """The caches and links of one history (the machine's, shared with its planning)."""

    def __init__(self, h: HistoryRun, bed: HistoryBed, world: World) -> None:
        self.h, self.bed, self.world = h, bed, world
        self.fills = 0
        self.can_unregister = False  # whether the backend's cache manager has unregister_cache (known once open)

    def live_bytes(self) -> int:
        return sum(c.info.nbytes * c.num_tensors for c in self.world.live())

    def room_for(self, desc: CacheSpec) -> bool:
        budget = self.h.stream.bytes
        size = self.h.dom.itemsize.get(desc.data_type, 1) * math.prod(desc.shape) * desc.num_tensors
        return budget is None or self.live_bytes() + size <= budget

    def make(self, data: Any, node: NodeState, desc: CacheSpec, *, accessible: bool | None = None,
             layers_of: int = 0, registered: bool | None = None, blocks: bool | None = None) -> CacheState | None:
        """A new cache on ``node``: allocated, or registered raw memory at uneven offsets (open to remote access
        or not, unless ``accessible`` says), filled with drawn contents; a blocks cache where ``blocks`` says
        (default: the kind the run's operation moves)."""
        h, bed = self.h, self.bed
        if not self.room_for(desc) or not node.alive:
            return None
        name = bed.new_name()
        blocks = self.blocks if blocks is None else blocks
        model_id = self.model_id(data, node, name) if blocks else None
        # a blocks cache is bound to its key; a contiguous one is not, whatever the layout it mirrors was
        desc = desc.with_(blocks=model_id is not None, model_id=model_id)
        register = h.dom.can_register and (registered if registered is not None
                                            else data.draw(st.booleans(), label=f"{name} registered"))
        if register:
            gaps, order = draws.registration(data.draw, h.hist, desc.num_tensors)
            if accessible is None:
                accessible = data.draw(st.sampled_from([True, True, True, False]), label=f"{name} remote_accessible")
            info = bed.register_at(name, node, desc, gaps, order, accessible)
        else:
            accessible = True
            allocated = bed.allocate(name, node, desc)
            if allocated is None:
                return None
            info = allocated
        code, shift = draws.content_code(data.draw, h.run.spec, desc, info.nbytes, self.filled())
        bed.fill_with(info, code)
        cache = CacheState(info, node.index, self.world.tick(), register, accessible,
                           int(getattr(info.cache, "cache_id", 0)), layers_of, shift, host=node,
                           can_free=not register or self.can_unregister, model_id=model_id)
        self.world.caches.append(cache)
        return cache

    @property
    def blocks(self) -> bool:
        """Whether the run's own caches are blocks caches (its operation moves block lists)."""
        return self.h.run.spec.operation.lists

    def model_id(self, data: Any, node: NodeState, name: str) -> int:
        """The model_id of a new blocks cache on ``node``: one no live blocks cache of the node is bound to, drawn
        among those of its freed blocks caches (a serving system reuses a released cache's key) or new."""
        held = {c.model_id for c in self.world.live(node.index) if c.model_id is not None}
        reusable = sorted({c.model_id for c in self.world.freed(node.index) if c.model_id is not None} - held)
        fresh = max(held | set(reusable) | {-1}) + 1
        return data.draw(st.sampled_from([fresh, *reusable]), label=f"{name} model_id")

    def filled(self) -> int:
        """How many caches this history has filled, this one included (each fill's bytes differ from all others)."""
        self.fills += 1
        return self.fills

    def rewrite(self, data: Any, cache: CacheState) -> None:
        """New contents for ``cache`` (a source rewritten between pushes): its special patterns shifted, so that
        every batch entry of every tensor changes."""
        info = cache.info
        desc = CacheSpec(cache.num_tensors, tuple(info.shape), info.data_type, info.placement)
        code, cache.shift = draws.content_code(data.draw, self.h.run.spec, desc, info.nbytes, self.filled(),
                                               after=cache.shift)
        self.bed.fill_with(info, code)

    def make_pair(self, data: Any, client: NodeState, server: NodeState, desc: CacheSpec, tnpl: int, *,
                  registered: bool | None = None, blocks: bool | None = None) -> tuple[CacheState, CacheState] | None:
        """A source of ``desc`` on ``client`` and a destination made for it on ``server`` (of the kind ``blocks``
        says, as :meth:`make`)."""
        h = self.h
        src = self.make(data, client, desc, accessible=True, layers_of=tnpl, registered=registered, blocks=blocks)
        if src is None:
            return None
        dst = self.make(data, server, draws.mirror_desc(data.draw, src, tnpl, h.dom, h.stream), accessible=True,
                        layers_of=tnpl, registered=registered, blocks=blocks)
        return (src, dst) if dst is not None else None

    def link(self, client: NodeState, server: NodeState) -> None:
        self.bed.link_nodes(client, server)
        self.world.links[(client.index, server.index)] = LinkState(self.world.tick(), ends=(client, server))
        self.world.ever_linked.add((client.index, server.index))

    def unlink(self, client: NodeState, server: NodeState) -> None:
        self.bed.unlink_nodes(client, server)
        self.world.links.pop((client.index, server.index)).current = False

    def freeable(self) -> list[CacheState]:
        return [c for c in self.world.live() if self.world.nodes[c.node].alive
                and (not c.registered or self.can_unregister)]

    def freed_again(self) -> list[CacheState]:
        return [c for c in self.world.freed() if not c.registered and not c.blocks and self.world.nodes[c.node].alive]

    def rewritable(self) -> list[CacheState]:
        return [c for c in self.world.live() if self.world.nodes[c.node].alive]
