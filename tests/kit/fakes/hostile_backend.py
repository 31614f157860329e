"""Fake backends that try to run code in the kit's process through what they send it (run them isolated).

Each wraps the reference and works for source batch 0 (the smoke check), so the run starts; the tests that push
from batch 1 meet the attack.  The payload, if it ever ran in the kit, would create the file ``$HOSTILE_MARKER``
and switch the kit's data checks off (:data:`PAYLOAD`).

* ``data_bug``: its push from batch 1 pushes batch 0 (a data bug), and its ``capabilities()`` holds an object
  whose ``__reduce__`` is the payload: with a pickled wire, that object switched the checks off and the data bug
  was CERTIFIED;
* ``evil_exception``, ``evil_result``: its push from batch 1 raises an exception, or returns an object, whose
  ``__reduce__`` is the payload (what a pickling child would have sent);
* ``wire_caps``, ``wire_result``, ``wire_exception``, ``wire_handle``, ``wire_frame``: the backend goes around
  the kit's encoder in its own process and puts a pickle of the payload on the pipe: as the ready message's
  capabilities, as a push's result, as the exception it raised, inside a handle, or as a whole reply frame;
* ``keyboard_interrupt``, ``system_exit``: its push from batch 1 raises KeyboardInterrupt / SystemExit.
"""

from __future__ import annotations

import os
import pickle
import threading
from typing import Any

import msgpack
from _proxy import ProxyCacheManager, backend_with

#: what the payload does in the process that unpickles it
PAYLOAD = (
    "import os, pathlib\n"
    "pathlib.Path(os.environ['HOSTILE_MARKER']).write_text('the payload ran here')\n"
    "import conformance_tests.judging.judge as j\n"
    "j.effect_problems = lambda *a, **k: []\n"
    "j.outcome_problem = lambda *a, **k: None\n"
)


class Evil:
    """Unpickled, it runs the payload."""

    def __reduce__(self) -> Any:
        return (exec, (PAYLOAD,))


class EvilError(ValueError):
    def __reduce__(self) -> Any:
        return (exec, (PAYLOAD,))


#: set on the thread whose push meets the attack: the next reply the child sends is the one to replace
_AIM = threading.local()


def _batch_one(src_batch_index: Any) -> bool:
    return type(src_batch_index) is int and src_batch_index == 1


def _manager(action: str) -> type:
    class HostileCacheManager(ProxyCacheManager):
        def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # noqa: ANN001
                       dst_layer_range=None, size=-1, tensor_num_per_layer=2):
            if _batch_one(src_batch_index):
                if action == "data_bug":
                    src_batch_index = 0
                elif action == "evil_exception":
                    raise EvilError("an exception that runs code when unpickled")
                elif action == "evil_result":
                    super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range,
                                       dst_layer_range, size, tensor_num_per_layer)
                    return Evil()
                elif action == "keyboard_interrupt":
                    raise KeyboardInterrupt("the backend's own KeyboardInterrupt")
                elif action == "system_exit":
                    raise SystemExit(3)
                elif action.startswith("wire_"):
                    _AIM.on = True
            return super().push_cache(dst_cache_key, src_cache, src_batch_index, src_layer_range, dst_layer_range,
                                      size, tensor_num_per_layer)

    return HostileCacheManager


def _go_around_the_encoder(action: str) -> None:
    """Replace the kit's encoding in this (the backend's) process by pickles of the payload."""
    from datawire import rpc

    reply_frame, hello_frame = rpc.reply_frame, rpc.hello_frame
    evil = pickle.dumps(Evil())

    def message(body: bytes) -> bytes:  # a codec message's framing around a body of the attacker's making
        return len(body).to_bytes(4, "little") + body

    def hostile_reply(rid: int, status: str, body: Any) -> Any:
        if not getattr(_AIM, "on", False):
            return reply_frame(rid, status, body)
        _AIM.on = False
        if action == "wire_result":
            return reply_frame(rid, rpc.OK, evil)
        if action == "wire_exception":
            return reply_frame(rid, rpc.ERR, pickle.dumps(EvilError("boom")))
        if action == "wire_handle":
            return reply_frame(rid, rpc.OK, message(msgpack.packb(msgpack.ExtType(9, evil))))
        return (evil,)  # wire_frame: the whole frame

    def hostile_hello(status: str, body: Any) -> Any:
        if action == "wire_caps" and status == rpc.OK:
            return reply_frame(rpc.HELLO, status, pickle.dumps({"name": "fake-wire-caps", "version": "0", "target": "x",
                                                               "caps": {"placements": ["HOST"], "x": Evil()}}))
        return hello_frame(status, body)

    rpc.reply_frame = hostile_reply  # type: ignore[assignment]
    rpc.hello_frame = hostile_hello  # type: ignore[assignment]


def _backend(action: str) -> Any:
    made = backend_with(f"fake-{action.replace('_', '-')}", _manager(action))
    if action == "data_bug":
        caps = made.capabilities()
        made.capabilities = lambda: {**caps, "vendor_notes": Evil()}  # type: ignore[method-assign]
    return made


data_bug = _backend("data_bug")
evil_exception = _backend("evil_exception")
evil_result = _backend("evil_result")
keyboard_interrupt = _backend("keyboard_interrupt")
system_exit = _backend("system_exit")
wire_caps = _backend("wire_caps")
wire_result = _backend("wire_result")
wire_exception = _backend("wire_exception")
wire_handle = _backend("wire_handle")
wire_frame = _backend("wire_frame")

# $HOSTILE_WIRE names the wire_* variant whose attack this process makes (the module is imported in the backend's
# process, where the kit's encoder lives)
if os.environ.get("HOSTILE_WIRE", "").startswith("wire_"):
    _go_around_the_encoder(os.environ["HOSTILE_WIRE"])
