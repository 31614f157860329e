"""The one wire of the project: data only, at every process and host boundary.

The kit and its isolated backend (``conformance_tests.isolation``), the node host and its node processes
(``nodehost``, local or on other hosts through SSH), and the multi-process reference's nodes talking to each other
(``reference_impl.multiprocess.control``) all speak it. Its modules:

* :mod:`datawire.codec` - values to bytes and back (msgpack, a closed vocabulary, handles through hooks);
* :mod:`datawire.vocabulary` - the API's enums and value types by name, and the exception kinds;
* :mod:`datawire.errors` - exceptions as records (kind, status code, message, traceback);
* :mod:`datawire.frames` - size-bounded frames on a pipe or socket;
* :mod:`datawire.rpc` - requests and replies: one envelope, one status vocabulary, the reply slot, the client and
  the responder every boundary uses.

Nothing here imports the kit, the reference or the node host.
"""

from __future__ import annotations

from .codec import MAX_FRAME, Codec, Names, NotData, Opaque, WireError, decode_plain, encode_plain
from .errors import ErrorRecord, RemoteInterrupt, rebuild, record_of

__all__ = ["MAX_FRAME", "Codec", "ErrorRecord", "Names", "NotData", "Opaque", "RemoteInterrupt", "WireError",
           "decode_plain", "encode_plain", "rebuild", "record_of"]
