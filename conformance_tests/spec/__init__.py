"""The push_cache spec as typed objects: ``load_spec()`` reads ``spec/push_cache.yaml`` (installed as
``push_cache_spec``), checks it against ``spec.schema.json`` and the cross-references the schema cannot express,
and returns a :class:`Spec`. A spec that cannot be used raises :class:`SpecError`, one line saying where and what.

Modules: ``levels`` (the one owner of the levels), ``expect`` (the expectation forms), ``value_language`` (the
case value language), ``model`` (the typed spec), ``validate`` (schema and semantic checks), ``load`` (the loader),
``paths`` (the packaged files and the schema's vocabularies), ``errors``.
"""

from .errors import SpecError
from .expect import AnyOf, Expectation, Raises, Succeeds
from .levels import BLOCKING_LEVELS, LEVELS, Level
from .load import load_spec
from .model import CacheSpec, Case, Clause, Fault, NodeSpec, ProcedureSpec, Scenario, Signature, Spec
from .paths import default_schema_path, default_spec_path, families, operation_spec_path, specified_operations

__all__ = [
    "BLOCKING_LEVELS",
    "LEVELS",
    "AnyOf",
    "CacheSpec",
    "Case",
    "Clause",
    "Expectation",
    "Fault",
    "Level",
    "NodeSpec",
    "ProcedureSpec",
    "Raises",
    "Scenario",
    "Signature",
    "Spec",
    "SpecError",
    "Succeeds",
    "default_schema_path",
    "default_spec_path",
    "families",
    "load_spec",
    "operation_spec_path",
    "specified_operations",
]
