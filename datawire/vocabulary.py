"""The names the wire knows: the API's enums and value types (``llm_datadist``'s, as the spec's types table and
``nodehost/vendor_api.py`` list them) and the exception kinds an exception may cross as.

Data, not code: each end of a wire looks these names up in its own tables (:class:`datawire.codec.Names`), so a
message can name a type but never make the receiver import anything.
"""

from __future__ import annotations

import builtins

#: the API's enums: a member crosses as (enum name, member name)
ENUMS = ("DataType", "Placement", "LLMStatusCode", "LLMRole")

#: the API's value types: a value crosses as (type name, constructor arguments), each argument read back from the
#: first of its attributes the object has (an argument none of them gives is left to the constructor's default);
#: positional arguments first, then keywords
VALUE_TYPES: dict[str, tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, tuple[str, ...]], ...]]] = {
    "CacheDesc": (
        (("num_tensors",), ("shape",), ("data_type",), ("placement",)),
        (("batch_dim_index", ("batch_dim_index", "batch_dim")), ("seq_len_dim_index", ("seq_len_dim_index",)),
         ("kv_tensor_format", ("kv_tensor_format",))),
    ),
    "CacheKey": ((("prompt_cluster_id", "cluster_id"), ("req_id",), ("model_id",), ("prefix_id",)), ()),
    "CacheKeyByIdAndIndex": ((("cluster_id",), ("cache_id",), ("batch_index",)), ()),
    "BlocksCacheKey": ((("prompt_cluster_id", "cluster_id"), ("model_id",)), ()),
}

#: the exception the API raises, with a status code
LLM_EXCEPTION = "LLMException"
#: the enum its status code is a member of
STATUS_ENUM = "LLMStatusCode"

#: the kinds an exception crosses as: the API's exception, or the nearest of these builtins in its class's MRO
#: (each takes one message); a kind that is not an Exception (KeyboardInterrupt, SystemExit, ...) is rebuilt as
#: :class:`datawire.errors.RemoteInterrupt`, an ordinary Exception, so it fails a call and never stops the caller
BUILTIN_KINDS = (
    "TypeError", "ValueError", "KeyError", "IndexError", "AttributeError", "NotImplementedError", "RecursionError",
    "TimeoutError", "ConnectionError", "FileNotFoundError", "PermissionError", "OSError", "OverflowError",
    "ZeroDivisionError", "ArithmeticError", "LookupError", "AssertionError", "MemoryError", "RuntimeError",
    "EOFError", "BufferError", "ImportError", "Exception", "KeyboardInterrupt", "SystemExit", "GeneratorExit",
    "BaseException",
)
KINDS = (LLM_EXCEPTION, *BUILTIN_KINDS)
#: kind -> the builtin class, for the builtin kinds
BUILTIN_CLASSES: dict[str, type[BaseException]] = {name: getattr(builtins, name) for name in BUILTIN_KINDS}

#: names ``node.api`` offers that the tests build every argument from (the backend protocol's; the kit's smoke
#: check requires each of them)
API_NAMES = ("CacheDesc", "CacheKey", "CacheKeyByIdAndIndex", "BlocksCacheKey", "Cache", "Placement", "DataType",
             LLM_EXCEPTION, STATUS_ENUM)
#: every name of ``node.api`` a node host or the isolated kit hands on: the tests' names and those that set a node
#: up (its role, its options, a link's peer); the ones that are neither an enum nor a value type cross as handles
NODE_API_NAMES = (*API_NAMES, "LLMRole", "LLMConfig", "LLMClusterInfo")
