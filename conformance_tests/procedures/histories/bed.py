"""The testbed of one history: a cluster of any number of nodes, opened through the backend protocol, with caches
made, registered at uneven offsets, filled, freed and pushed between in any order.  Every backend call goes
through the testbed's recorder, so the history's reproduction is its call log as a script; every live cache,
guard band and freed region stays watched (:class:`~conformance_tests.testbed.testbed.Testbed`), on every node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...inputs.values import Value
from ...judging.judged_push import Push
from ...running.context import RunContext
from ...spec import CacheSpec
from ...testbed.errors import HarnessError
from ...testbed.recorder import lit
from ...testbed.testbed import GUARD, CacheInfo, Freed, Outcome, Testbed
from .world import NodeState

#: caches holding more than this are read in windows (each tensor's ends, both edges of every batch entry, and
#: sampled windows); a window that disagrees with the model, a full read
WINDOWED_BYTES = 16 << 20
WINDOW = 64
SAMPLED_WINDOWS = 4
#: how a repro script reads a cache's tensors (defined at its top)
SNAP = ("def snap(node, cache):",
        "    return [np.asarray(node.read_tensor(cache, t)).ravel() for t in range(len(cache.tensor_addrs))]")
#: how a repro script builds a cache's contents (defined at its top): random bytes (eight at a time: a uint8 draw
#: per byte costs ten times more at model scale), every batch entry of every tensor starting with ``head`` special
#: patterns of its DataType, from pattern ``shift + tensor + entry`` on (a rewrite with another shift changes
#: every entry, whatever the random bytes)
CONTENTS = (
    "def contents(seed, pattern, size, shift, head, tensors, batch, nbytes):",
    "    data = np.random.default_rng(seed).integers(0, 2**64 - 1, (tensors, max(1, -(-nbytes // 8))),",
    "                                                dtype=np.uint64, endpoint=True).view(np.uint8)[:, :nbytes].copy()",
    "    special = np.frombuffer(bytes.fromhex(pattern), np.uint8).reshape(-1, size)",
    "    at = (shift + np.arange(tensors)[:, None, None] + np.arange(batch)[:, None] + np.arange(head)) % len(special)",
    "    data.reshape(tensors, batch, -1)[:, :, :head * size] = special[at].reshape(tensors, batch, head * size)",
    "    return data",
)


class HistoryBed(Testbed):
    """One history's cluster.  Node ``n<i>`` and cache ``c<k>`` are the names the call log gives them."""

    def __init__(self, run: RunContext, *, label: str = "") -> None:
        super().__init__(run, run.spec.scenario, minimal=True, title=label)
        self.nodes: dict[str, Any] = {}
        self.next_cache = 0
        #: per cache, the states the call being judged may leave it in besides its model bytes (the oracle's)
        self.candidates: dict[str, list[list[np.ndarray]]] = {}
        #: caches whose last windowed read matched no state the model knows (read in full when judged right)
        self.inexact: set[str] = set()
        self.reads = 0  # windowed reads so far: each samples other windows, the same in every replay
        self.cluster_ids: dict[str, int] = {}  # node name -> its cluster id

    # ---- the cluster -------------------------------------------------------------------------------------

    def open_nodes(self, nodes: Sequence[NodeState]) -> None:
        specs = [{"cluster_id": n.cluster_id, "role": n.role, "options": dict(n.options)} for n in nodes]
        self.cluster_ids = {n.name: n.cluster_id for n in nodes}
        backend = self.rec.bind("backend", self.backend)
        self.cluster = self._step("open_cluster", self.rec.invoke, "cluster", backend, "open_cluster", lit(specs))
        for n in nodes:
            self.nodes[n.name] = self._step("cluster.node", self.rec.invoke, n.name, Value(self.cluster, "cluster"),
                                            "node", lit(n.cluster_id))
        self.api = self.rec.let("api", f"{nodes[0].name}.api").obj
        self.rec.lines += [*SNAP, *CONTENTS]
        exec("\n".join(CONTENTS), self.rec.ns)  # noqa: S102 - the script's own helper, defined where it runs too

    def node(self, node_name: str) -> Any:
        return self.nodes[node_name]

    def cluster_of(self, node_name: str) -> int:
        return self.cluster_ids[node_name]

    def forget(self) -> None:
        """Drop every byte and every backend object the history holds, once its cluster is closed (its call log
        stays: it is the reproduction)."""
        self.before.clear()
        self.candidates.clear()
        self.freed.clear()
        self.caches.clear()
        self.nodes.clear()
        self.rec.ns.clear()
        self.cluster = self.local = self.remote = self.src = self.dst = self.api = None

    def link_nodes(self, client: NodeState, server: NodeState) -> None:
        self._step("cluster.link", self.rec.invoke, None, Value(self.cluster, "cluster"), "link",
                   lit(client.cluster_id), lit(server.cluster_id))

    def unlink_nodes(self, client: NodeState, server: NodeState) -> None:
        self._step("cluster.unlink", self.rec.invoke, None, Value(self.cluster, "cluster"), "unlink",
                   lit(client.cluster_id), lit(server.cluster_id))

    def inject_fault(self, node: NodeState, fault: Mapping[str, Any]) -> None:
        self._step(f"{node.name}.inject", self.rec.invoke, None, Value(self.nodes[node.name], node.name), "inject",
                   lit(dict(fault)))
        if fault.get("kind") == "kill_node":
            self.dead.add(node.name)
        node.faulty = fault.get("kind") in ("delay", "drop_link")

    # ---- caches ------------------------------------------------------------------------------------------

    def new_name(self) -> str:
        self.next_cache += 1
        return f"c{self.next_cache}"

    def allocate(self, name: str, node: NodeState, desc: CacheSpec) -> CacheInfo | None:
        """``allocate_cache`` on the node; None when the backend refuses it with its LLMException (its pool is
        full, or has no room for the placement): a refusal the history goes on after."""
        try:
            info = self.make_cache(name, node.name, desc.with_(register=False))
        except HarnessError as exc:
            if isinstance(exc.__cause__, getattr(self.api, "LLMException", ())):
                self.rec.comment(f"refused: {exc}")
                return None
            raise
        self.forget_reused(info)
        return info

    def register_at(self, name: str, node: NodeState, desc: CacheSpec, gaps: Sequence[int],
                    order: Sequence[int], remote_accessible: bool) -> CacheInfo:
        """Raw memory with the tensors at uneven, unaligned offsets: ``gaps[i]`` guard bytes before the i-th
        tensor in memory and ``gaps[-1]`` after the last, the tensors laid out in ``order`` (tensor ``order[i]``
        is the i-th in memory), then ``register_cache`` of those addresses."""
        nodev = Value(self.nodes[node.name], node.name)
        layout = self.layout(desc)
        offsets = [0] * layout.num_tensors
        at = 0
        for i, tensor in enumerate(order):
            at += gaps[i]
            offsets[tensor] = at
            at += layout.nbytes
        total = at + gaps[-1]
        mem = self._step("alloc_memory", self.making.alloc, name, node.name, desc.placement, total)
        self._step("write_memory", self.rec.invoke, None, nodev, "write_memory", Value(mem, f"{name}_mem"),
                   Value(np.full(total, GUARD, dtype=np.uint8), f"np.full({total}, {GUARD:#04x}, dtype=np.uint8)"))
        addrs = [mem + off for off in offsets]
        # a blocks cache (desc.blocks) by register_blocks_cache, bound to its BlocksCacheKey
        method = "register_blocks_cache" if desc.blocks else "register_cache"
        keys = self.making.cache_keys(node.name, desc) if desc.blocks else {}
        cache = self._step(f"{method} ({name})", self.rec.invoke, name, nodev, f"cache_manager.{method}",
                           self.desc_value(node.name, desc),
                           Value(addrs, f"[{name}_mem + off for off in {offsets!r}]"),
                           remote_accessible=lit(remote_accessible), **keys)
        info = CacheInfo(name, node.name, cache, layout, desc.data_type, desc.placement, addrs, (mem, total),
                         "register_blocks" if desc.blocks else "register")
        self.caches[name] = info
        return info

    def fill_with(self, info: CacheInfo, code: str) -> list[np.ndarray]:
        """Write the ``(num_tensors, nbytes)`` uint8 array that ``code`` builds into every tensor."""
        data = self.rec.let(f"{info.name}_data", code).obj
        rows = [np.ascontiguousarray(r) for r in data]
        self.making.fill(info, f"{info.name}_data", rows)
        return rows

    def free(self, name: str, *, registered: bool) -> None:
        """``deallocate_cache`` (allocated) or ``unregister_cache`` (registered); its memory stays watched, and
        what it holds now is what it must go on holding."""
        if not registered:
            self.deallocate(name)
        else:
            info = self.caches.pop(name)
            self.before.pop(name, None)
            node = Value(self.nodes[info.node_name], info.node_name)
            self._step(f"unregister_cache ({name})", self.rec.invoke, None, node, "cache_manager.unregister_cache",
                       Value(int(getattr(info.cache, "cache_id", 0)), f"{name}.cache_id"))
            self.freed.append(Freed(info, list(info.guarded or [])))
        watched = self.freed[-1]
        if watched.info.node_name not in self.dead:
            watched.before = self.read_many(watched.info.node_name, [(a, watched.info.nbytes) for a in watched.addrs])

    def deallocate_again(self, name: str, cache: Any, node_name: str) -> None:
        """``deallocate_cache`` of a cache already freed: documented as a no-op."""
        self._step(f"deallocate_cache ({name}, again)", self.rec.invoke, None,
                   Value(self.nodes[node_name], node_name), "cache_manager.deallocate_cache", Value(cache, name))

    def forget_reused(self, info: CacheInfo) -> None:
        """A freed region the backend gave to a new cache of the same node belongs to that cache now."""
        if not self.caps.get("raw_memory"):
            return
        try:
            addrs = [int(a) for a in getattr(info.cache, "tensor_addrs", []) or []]
        except Exception as exc:  # noqa: BLE001 - a Cache without addresses: nothing to compare
            raise HarnessError(f"{info.name}.tensor_addrs", str(exc)) from exc
        spans = [(a, a + info.nbytes) for a in addrs]
        keep = []
        for f in self.freed:
            if f.info.node_name == info.node_name and not f.info.guarded and any(
                    a < hi and lo < a + f.info.nbytes for a in f.addrs for lo, hi in spans):
                continue
            keep.append(f)
        self.freed[:] = keep

    # ---- reading large caches in windows -----------------------------------------------------------------

    def addresses(self, info: CacheInfo) -> list[int] | None:
        if info.guarded:
            return list(info.guarded)
        if not self.caps.get("raw_memory"):
            return None
        try:
            return [int(a) for a in getattr(info.cache, "tensor_addrs", []) or []] or None
        except Exception:  # noqa: BLE001 - no addresses: read it whole
            return None

    def windows(self, info: CacheInfo) -> list[list[tuple[int, int]]]:
        """Per tensor, the (offset, bytes) spans a windowed read takes: both ends, both edges of every batch
        entry (where a push starts and stops writing), and sampled windows."""
        n, stride = info.nbytes, info.stride
        rng = np.random.default_rng(self.reads)
        self.reads += 1
        out = []
        for _ in range(info.num_tensors):
            starts = {0, max(0, n - WINDOW)}
            for b in range(1, info.batch):
                starts.add(max(0, b * stride - WINDOW // 2))
            starts.update(int(x) for x in rng.integers(0, max(1, n - WINDOW), SAMPLED_WINDOWS))
            out.append([(s, min(WINDOW, n - s)) for s in sorted(starts)])
        return out

    def read_caches(self, infos: Sequence[CacheInfo]) -> dict[str, list[np.ndarray]]:
        """Caches' bytes; a large one in windows (:meth:`windowed`), the others together."""
        large = {i.name: (i, addrs) for i in infos if i.nbytes * i.num_tensors > WINDOWED_BYTES
                 and i.name in self.before and (addrs := self.addresses(i)) is not None}
        out = super().read_caches([i for i in infos if i.name not in large])
        for name, (info, addrs) in large.items():
            out[name] = self.windowed(info, addrs)
        return out

    def windowed(self, info: CacheInfo, addrs: list[int]) -> list[np.ndarray]:
        """A large cache's bytes read in windows (its tensors at ``addrs``): the state the model expects (its
        bytes, or what the call being judged may leave) whose windows all match, else the model's bytes with the
        windows read in."""
        spans = self.windows(info)
        flat = [(t, off, size) for t, tensor in enumerate(spans) for off, size in tensor]
        got = self.read_many(info.node_name, [(addrs[t] + off, size) for t, off, size in flat])
        for state in [self.before[info.name], *self.candidates.get(info.name, [])]:
            if all(np.array_equal(state[t][off:off + size], g) for (t, off, size), g in zip(flat, got, strict=True)):
                self.inexact.discard(info.name)
                return state
        spliced = [b.copy() for b in self.before[info.name]]
        for (t, off, size), g in zip(flat, got, strict=True):
            spliced[t][off:off + size] = g
        self.inexact.add(info.name)
        return spliced

    def full_read(self, name: str) -> list[np.ndarray]:
        return Testbed.read_caches(self, [self.caches[name]])[name]

    # ---- pushes ------------------------------------------------------------------------------------------

    def aim(self, client: NodeState, server: NodeState, src: CacheInfo, dst: CacheInfo | None,
            dst_readable: bool, *, pulls: bool = False) -> Push:
        """The push ``client`` makes from ``src`` into ``dst`` on ``server`` (``pulls``: the pull ``client``
        makes from ``src`` on ``server`` into its own ``dst``), named ``local``/``remote``/``src``/``dst`` in the
        script from here on (whose check of the transfer, if it fails, reads ``src_data`` and ``dst_data`` as
        they were before it)."""
        dst_name = dst.name if dst is not None else "None"
        src_node, dst_node = ("remote", "local") if pulls else ("local", "remote")
        dst_snap = f"snap({dst_node}, {dst_name})" if dst is not None and dst_readable else "[]"
        self.rec.lines.append(f"local, remote, src, dst = {client.name}, {server.name}, {src.name}, {dst_name}")
        self.rec.lines.append(f"src_data, dst_data = snap({src_node}, src), {dst_snap}")
        return self.aimed(client.name, server.name, src, dst)

    def push_call(self, push: Push, bound: float) -> Outcome:
        """Make ``push``'s call; counted among the history's transfers where it is the run's operation's (a
        companion's are judged, not counted: the run's figures are its operation's)."""
        if push.operation == self.run.spec.api:
            self.run.counters.history_pushes += 1
        return self.push(push, bound=bound)


def contents_code(seed: int, pattern: bytes, size: int, shift: int, head: int, num_tensors: int, batch: int,
                  nbytes: int) -> str:
    """The code of a cache's contents (:data:`CONTENTS`): random bytes from ``seed``, every batch entry of every
    tensor starting with ``head`` of the special patterns of ``pattern`` (elements of ``size`` bytes)."""
    return f"contents({seed}, {pattern.hex()!r}, {size}, {shift}, {head}, {num_tensors}, {batch}, {nbytes})"
