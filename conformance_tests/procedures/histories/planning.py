"""How a history plans a push: the pairs a push could go between, the arguments of a valid push (tensor_num_per_layer,
layer ranges, batch entries, calling form), and a push valid in every respect over a usable link."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from ...inputs import strategies
from . import draws
from .making import Making
from .pushes import STYLES, HistoryRun, Plan
from .world import CacheState, NodeState, World

#: live caches from which a valid push prefers the caches there are to new ones (each check reads them all)
MAX_LIVE_CACHES = 8


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def layout_of(plan: Plan) -> strategies.Layout:
    def side(c: CacheState) -> strategies.Side:
        return strategies.Side(c.num_tensors, tuple(c.info.shape), c.info.data_type, c.info.placement, False)

    assert plan.dst is not None
    return strategies.Layout(side(plan.src), side(plan.dst), plan.tnpl, plan.src_batch, plan.dst_batch,
                             plan.src_range, plan.dst_range)


class Planning:
    """The pushes one history can make now (the machine's, over its :class:`Making`)."""

    def __init__(self, h: HistoryRun, world: World, making: Making) -> None:
        self.h, self.world, self.making = h, world, making

    def tnpls(self, src: CacheState, dst: CacheState, *, open_: CacheState | None = None) -> list[int]:
        """tensor_num_per_layer values a valid push from ``src`` into ``dst`` may take (none: not a pair, caches of
        two kinds among them);
        ``open_``: the cache the key names, which must be open to remote access (default: a push's, ``dst``)."""
        a, b = src.info, dst.info
        if (src.blocks != dst.blocks or a.data_type != b.data_type or a.stride != b.stride or (a.placement, b.placement) not in self.h.dom.transfers
                or not (open_ or dst).remote_accessible):
            return []
        options = divisors(a.num_tensors) if self.h.has_tnpl else [self.h.run.default_tnpl]
        return [t for t in options if a.num_tensors % t == 0 and b.num_tensors % t == 0]

    def args(self, data: Any, src: CacheState, dst: CacheState, tnpls: list[int], *,
             min_layers: int = 1, max_layers: int | None = None) -> tuple[int, tuple[int, int] | None] | None:
        """tensor_num_per_layer and the layer range (the same on both sides, as documented; the default only
        where both caches have as many layers) of a valid push, with at least ``min_layers`` layers and at most
        ``max_layers`` (None: any); a real model's cache is pushed by its own layers (K and V)."""
        options = [t for t in tnpls if min(src.num_tensors, dst.num_tensors) // t >= min_layers]
        if self.h.stream.layouts == "models" and src.layers_of in options:
            options = [src.layers_of]
        if not options:
            return None
        tnpl = data.draw(st.sampled_from(options), label="tensor_num_per_layer")
        ls, ld = src.num_tensors // tnpl, dst.num_tensors // tnpl
        whole = ls == ld and (max_layers is None or ls <= max_layers)
        if whole and (self.h.stream.layouts == "models" or data.draw(st.booleans(), label="default ranges")):
            return tnpl, None  # a real model's entry is pushed whole: every layer
        top = min(ls, ld)
        start = data.draw(st.integers(0, top - min_layers), label="range start")
        stop = top if max_layers is None else min(top, start + max_layers)
        return tnpl, (start, data.draw(st.integers(start + min_layers, stop), label="range stop"))

    def plan(self, data: Any, client: NodeState, server: NodeState, src: CacheState, dst: CacheState, *,
             cache_id: int | None = None, min_layers: int = 1) -> Plan | None:
        tnpls = self.tnpls(src, dst)
        got = self.args(data, src, dst, tnpls, min_layers=min_layers) if tnpls else None
        if got is None:
            return None
        tnpl, rng = got
        style = data.draw(st.sampled_from(STYLES), label="calling form")
        return Plan(client, server, src, dst, dst.cache_id if cache_id is None else cache_id, tnpl, rng, rng,
                    data.draw(st.integers(0, src.batch - 1), label="src_batch_index"),
                    data.draw(st.integers(0, dst.batch - 1), label="dst batch_index"), style)

    def pairs(self, links: list[tuple[int, int]], *, freed_src: bool = False,
              freed_dst: bool = False) -> list[tuple[tuple[int, int], CacheState, CacheState]]:
        """(link, source, destination) a push could go over, between caches of the run's own kind; freed caches
        where asked."""
        w, kind = self.world, self.making.blocks
        out = []
        for link in links:
            client, server = w.nodes[link[0]], w.nodes[link[1]]
            srcs = ([c for c in w.freed(client.index, blocks=kind) if c.remote_accessible] if freed_src
                    else list(w.sources(client.index, blocks=kind)))
            dsts = w.freed(server.index, blocks=kind) if freed_dst else w.live(server.index, blocks=kind)
            out += [(link, s, d) for s in srcs for d in dsts if self.tnpls(s, d)]
        return out

    def new_pair(self, data: Any, links: list[tuple[int, int]], sources: list[tuple[tuple[int, int], CacheState]],
                 way: str, *, src_end: int, same_tensors: bool = False, dst_accessible: bool | None = None,
                 blocks: bool | None = None) -> tuple[tuple[int, int], CacheState, CacheState] | None:
        """A link and a (source, destination) pair made on it: a new source on the link's ``src_end`` (0: its
        client, a push's; 1: its server, a pull's) and a destination mirroring it at the other end, or a
        destination mirroring an existing source (``way``: "new source" or "new destination"); both of the kind
        ``blocks`` says (default: the run's own)."""
        w, h = self.world, self.h
        if way == "new source":
            p = data.draw(st.sampled_from(links), label="link")
            desc, hint = draws.fresh_desc(data.draw, h.run.spec, h.dom, h.stream, h.max_bytes)
            src = self.making.make(data, w.nodes[p[src_end]], desc, accessible=True, layers_of=hint, blocks=blocks)
            if src is None:
                return None
        else:
            p, src = data.draw(st.sampled_from(sources), label="source")
        tnpl = data.draw(st.sampled_from(divisors(src.num_tensors) if h.has_tnpl else [h.run.default_tnpl]),
                         label="layers of")
        dst = self.making.make(data, w.nodes[p[1 - src_end]], draws.mirror_desc(
            data.draw, src, tnpl, h.dom, h.stream, same_tensors=same_tensors), accessible=dst_accessible,
            layers_of=src.layers_of, blocks=src.blocks)
        return None if dst is None else (p, src, dst)

    def valid_plan(self, data: Any, *, min_layers: int = 1, link: tuple[int, int] | None = None,
                   same_tensors: bool = False, keep_faulted: bool = False) -> Plan | None:
        """A push valid in every respect over a usable link: between existing caches, or into a destination made
        for an existing source, or from a new source into a new destination; a link that does not see the
        destination yet, or over which a push that could time out went (``at_risk``, whether one did or not: that
        is timing), is made again first (the documentation asks for memory before the link; a vendor fails fast
        over a faulted link until then).  ``same_tensors``: source and
        destination hold as many tensors (what a generate rule starts from); ``keep_faulted``: the push that
        follows a timeout or a refusal, over the link as it is (between caches it sees, where there are any)."""
        w = self.world
        links = [link] if link is not None else w.usable_links()
        links = [p for p in links if p in w.links and w.nodes[p[0]].alive and w.nodes[p[1]].alive]
        if not links:
            return None
        found = [f for f in self.pairs(links) if not same_tensors or f[1].num_tensors == f[2].num_tensors]
        seen = [f for f in found if w.visibility(f[0], f[2]) == "valid"]
        if keep_faulted and seen:
            found = seen
        sources = [(p, s) for p in links for s in w.sources(p[0], blocks=self.making.blocks)]
        crowded = len(w.live()) >= MAX_LIVE_CACHES and found
        ways = ((["existing"] * 3 if found else []) + (["new destination"] if sources and not crowded else [])
                + (["new source"] if not crowded else [])) if not (keep_faulted and seen) else ["existing"]
        way = data.draw(st.sampled_from(ways), label="push between")
        if way != "existing":
            made = self.new_pair(data, links, sources, way, src_end=0, same_tensors=same_tensors,
                                 dst_accessible=True)
            if made is None:
                return None
            p, src, dst = made
            found = [(p, src, dst)] if self.tnpls(src, dst) else []
        if not found:
            return None
        p, src, dst = data.draw(st.sampled_from(found), label="push")
        client, server = w.nodes[p[0]], w.nodes[p[1]]
        if w.visibility(p, dst) != "valid" or (w.links[p].at_risk and not keep_faulted):
            self.making.unlink(client, server)
            self.making.link(client, server)
        return self.plan(data, client, server, src, dst, min_layers=min_layers)
