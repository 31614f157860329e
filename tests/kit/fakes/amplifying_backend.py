"""Fake backends that try to exhaust the kit's memory through small frames (run them isolated).

Each wraps the reference and works for source batch 0 (the smoke check), so the run starts; its push from
batch 1 meets the attack, made around the kit's encoder in the backend's own process:

* ``values``: the push's reply is a payload of 8 Mi empty maps (8 MB on the wire; some 600 MB as objects);
* ``request_ids``: before the push's reply, the process sends replies to 400,000 requests the kit never made
  (each would be kept, with its frame, for a request that never comes).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from _proxy import ProxyCacheManager, backend_with

from conformance_tests.isolation.processes import MARK_ENV

#: set on the thread whose push meets the attack: the next reply it sends is the one to replace
_AIM = threading.local()
MAPS = 8 << 20
STRANGERS = 400_000


class AimingCacheManager(ProxyCacheManager):
    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                   dst_layer_range=None, size=-1, tensor_num_per_layer=2):
        if type(src_batch_index) is int and src_batch_index == 1:
            _AIM.on = True
        return super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range,
                                  size, tensor_num_per_layer)


def _aimed() -> bool:
    if not getattr(_AIM, "on", False):
        return False
    _AIM.on = False
    return True


def _around_the_encoder(action: str) -> None:
    from datawire import Codec, decode_plain, frames, rpc

    if action == "values":
        reply_frame = rpc.reply_frame
        body = b"\xdd" + MAPS.to_bytes(4, "big") + b"\x80" * MAPS  # a msgpack list of MAPS empty maps

        def amplifying(rid: int, status: str, payload: Any) -> Any:
            if not _aimed():
                return reply_frame(rid, status, payload)
            return reply_frame(rid, rpc.OK, len(body).to_bytes(4, "little") + body)

        rpc.reply_frame = amplifying  # type: ignore[assignment]
        return
    send = frames.send
    nothing = Codec().encode(None)

    def with_strangers(conn: Any, *sections: Any) -> None:
        if len(sections) == 2 and _aimed():
            rid = decode_plain(sections[0])[1]
            for i in range(STRANGERS):
                send(conn, *rpc.reply_frame(rid + 1_000_000 + i, rpc.OK, nothing))
        send(conn, *sections)

    frames.send = with_strangers  # type: ignore[assignment]


values = backend_with("fake-amplifying-values", AimingCacheManager)
request_ids = backend_with("fake-amplifying-request-ids", AimingCacheManager)

# $AMPLIFY names the attack; only the backend's process (marked by the kit) makes it
if os.environ.get(MARK_ENV) and os.environ.get("AMPLIFY") in ("values", "request_ids"):
    _around_the_encoder(os.environ["AMPLIFY"])
