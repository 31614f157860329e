"""The node host's vendor driver touches only names the facts sheet documents (nodehost/vendor_api.py).

The driver keeps vendor objects in variables named ``vendor`` (the module; also ``self.vendor``),
``datadist``, ``info``, ``cm``, ``cache``, ``desc`` and ``exc``. Every attribute read or call on those names,
along whole chains (``vendor.Placement.DEVICE``, ``cache.cache_desc.size``), must be a documented vendor name;
``getattr`` with a constant name must be a vendor name or a declared extension; ``getattr`` with a computed
name is allowed only at the two sites whose name is checked at run time.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

import nodehost.driver
from nodehost import vendor_api

ROOTS = {"vendor", "datadist", "info", "cm", "cache", "desc", "exc"}
#: getattr(<object>, <computed name>): the LLMRole member from the role name, the cache-manager method (the
#: driver refuses names not in vendor_api.CACHE_MANAGER first)
DYNAMIC_SITES = {("vendor.LLMRole", "role_name"), ("cm", "name")}


def _root(node: ast.AST) -> tuple[str | None, list[str]]:
    """('vendor', ['Placement', 'DEVICE']) for ``self.vendor.Placement.DEVICE``; (None, []) otherwise."""
    chain: list[str] = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    chain.reverse()
    if isinstance(node, ast.Name):
        if node.id == "self" and chain[:1] == ["vendor"]:
            return "vendor", chain[1:]
        if node.id in ROOTS:
            return node.id, chain
    return None, []


def _dotted(node: ast.AST) -> str:
    root, chain = _root(node)
    return ".".join([root, *chain]) if root else ast.unparse(node)


def _scan(source: str) -> tuple[set[str], set[str], set[tuple[str, str]]]:
    """(attributes on vendor objects, constant getattr names, computed getattr sites) in ``source``."""
    attrs: set[str] = set()
    constant_getattrs: set[str] = set()
    dynamic: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            root, chain = _root(node)
            if root is not None:
                attrs.update(chain)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            obj, name = node.args[0], node.args[1]
            if _root(obj)[0] is None and not (isinstance(obj, ast.Name) and obj.id in ROOTS):
                continue
            if isinstance(name, ast.Constant):
                constant_getattrs.add(str(name.value))
            else:
                dynamic.add((_dotted(obj), ast.unparse(name)))
    return attrs, constant_getattrs, dynamic


def _driver_source() -> str:
    return pathlib.Path(nodehost.driver.__file__).read_text()


def test_every_vendor_name_the_driver_touches_is_documented() -> None:
    attrs, getattrs, dynamic = _scan(_driver_source())
    assert attrs, "the scan found no vendor attribute at all: the naming convention changed?"
    unknown = sorted(attrs - set(vendor_api.ALL_VENDOR))
    assert not unknown, f"vendor names the facts sheet does not list (nodehost/vendor_api.py): {unknown}"
    bad = sorted(getattrs - set(vendor_api.ALL_VENDOR) - set(vendor_api.EXTENSIONS))
    assert not bad, f"getattr names neither vendor nor declared extensions: {bad}"
    assert dynamic == DYNAMIC_SITES, f"getattr with a computed name at unreviewed sites: {dynamic - DYNAMIC_SITES}"


def test_the_scan_catches_an_undocumented_name() -> None:
    """The check can fail: a driver that used a private attribute or an undocumented call is caught."""
    source = _driver_source() + "\n\ndef _bad(datadist, cache):\n    datadist._engine.stop()\n    return cache._valid\n"
    attrs, _getattrs, _dynamic = _scan(source)
    assert {"_engine", "stop", "_valid"} <= attrs - set(vendor_api.ALL_VENDOR)


def test_forwarded_methods_are_the_documented_ones() -> None:
    from reference_impl.cache_manager import CacheManager

    missing = [m for m in ("push_cache", "allocate_cache", "register_cache", "deallocate_cache", "unregister_cache",
                           "allocate_blocks_cache", "deallocate_blocks_cache") if m not in vendor_api.CACHE_MANAGER]
    assert not missing
    # the reference implements every forwarded method the kit uses (the others are vendor-only)
    assert all(hasattr(CacheManager, m) for m in ("push_cache", "allocate_cache", "register_cache"))


def test_sources_point_into_the_facts_sheet() -> None:
    """Each entry cites a section of the facts sheet; where the sheet is at hand, the section mentions the name."""
    sections = re.compile(r"§(\d+(?:\.\d+)?)")
    for table in (vendor_api.MODULE, vendor_api.LLM_DATADIST, vendor_api.CLUSTER_INFO, vendor_api.CACHE,
                  vendor_api.VALUES, vendor_api.CACHE_MANAGER, vendor_api.OPTIONS):
        for name, source in table.items():
            assert sections.search(source), f"{name}: no § reference in {source!r}"
    facts = next((p / "shared/reference/llm-datadist-facts.md" for p in pathlib.Path(__file__).resolve().parents
                  if (p / "shared/reference/llm-datadist-facts.md").is_file()), None)
    if facts is None:
        pytest.skip("the facts sheet (shared/reference/llm-datadist-facts.md) is not next to this checkout")
    text = facts.read_text()
    absent = [n for n in vendor_api.ALL_VENDOR if n not in text]
    assert not absent, f"names the facts sheet never mentions: {absent}"
