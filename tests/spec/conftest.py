"""Fixtures for the spec-tooling self-tests: a small valid spec written in Python, dumped to YAML on demand."""

from __future__ import annotations

import copy
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.helpers.seeds import SEED_PAGES, SEEDS

MINI_SPEC: dict[str, Any] = {
    "spec_version": "9.0.0",
    "api": "push_cache",
    "operation": {"direction": "push", "key": "dst_cache_key", "cache": "src_cache", "unit": "batch",
                  "entries": {"src": "src_batch_index", "dst": "dst_batch_index"}},
    "releases": [
        {"name": "8.2.RC1.alpha002", "summary": "push_cache appears (5 parameters)", "source": "docs llmpr_42_0068"},
        {"name": "8.2.RC1.alpha003", "summary": "adds size", "source": "docs llmpr_42_0070"},
        {"name": "8.3.RC1.alpha003", "summary": "adds tensor_num_per_layer", "source": "docs llmprv2_42_0035"},
        {"name": "9.0.0", "summary": "same as 8.3.RC1.alpha003", "source": "docs llmprv2_42_0036"},
    ],
    "types": {
        "LLMStatusCode": {"kind": "IntEnum", "members": {
            "LLM_SUCCESS": {"value": 0},
            "LLM_PARAM_INVALID": {"value": 1343270917},
            "LLM_TIMEOUT": {"value": 1343270938},
        }},
        "Placement": {"kind": "IntEnum", "members": {"HOST": {"value": 0}, "DEVICE": {"value": 1}}},
        "domains": {"uint32": {"min": 0, "max": 4294967295}},
    },
    "signature": [
        {
            "since": "8.2.RC1.alpha002",
            "until": "8.3.RC1.alpha003",
            "parameters": [
                {"name": "dst_cache_key", "kind": "positional_or_keyword", "type": "CacheKeyByIdAndIndex",
                 "required": True},
                {"name": "src_cache", "kind": "positional_or_keyword", "type": "Cache", "required": True},
            ],
            "returns": "None",
            "var_kwargs": False,
        },
        {
            "since": "8.3.RC1.alpha003",
            "until": None,
            "parameters": [
                {"name": "dst_cache_key", "kind": "positional_or_keyword", "type": "CacheKeyByIdAndIndex",
                 "required": True},
                {"name": "src_cache", "kind": "positional_or_keyword", "type": "Cache", "required": True},
                {"name": "tensor_num_per_layer", "kind": "positional_or_keyword", "type": "int", "default": 2},
            ],
            "returns": "None",
            "var_kwargs": False,
        },
    ],
    "scenario": {
        "local": {"cluster_id": 1, "role": "PROMPT", "options": {"llm.EnableRemoteCacheAccessible": "1"}},
        "remote": {"cluster_id": 2, "role": "DECODER", "options": {"llm.EnableRemoteCacheAccessible": "1"}},
        "link": True,
        "src": {"num_tensors": 4, "shape": [2, 8], "data_type": "DT_FLOAT16", "placement": "DEVICE"},
        "dst": {"num_tensors": 4, "shape": [2, 8], "data_type": "DT_FLOAT16", "placement": "DEVICE"},
        "call": {"dst_batch_index": 0, "src_batch_index": 0, "size": -1, "tensor_num_per_layer": 2},
    },
    "clauses": [
        {
            "id": "push_cache.param.src_batch_index.type",
            "title": "src_batch_index must be an int",
            "level": "must",
            "family": "param",
            "source": {"kind": "doc", "ref": "push_cache > Returns",
                       "en": "If the input data type is incorrect, a TypeError or ValueError is thrown.",
                       "zh": "传入数据类型错误情况下会抛出TypeError或ValueError异常。"},
            "requires": ["placements.DEVICE"],
            "scenario": {"src": {"placement": "DEVICE"}},
            "cases": [
                {"name": "float", "args": {"src_batch_index": 1.0}},
                {"name": "list", "args": {"src_batch_index": {"list": [0]}}},
                {"name": "bool", "args": {"src_batch_index": True}, "expect": {"outcome": "success"},
                 "note": "bool is an int"},
            ],
            "expect": {"raises": ["TypeError", "ValueError"]},
        },
        {
            "id": "push_cache.param.src_batch_index.type_vendor",
            "title": "vendor raises TypeError for a non-int src_batch_index",
            "level": "should",
            "family": "param",
            "source": {"kind": "facts", "ref": "facts §1.2 #4"},
            "refines": "push_cache.param.src_batch_index.type",
            "expect": {"raises": ["TypeError"]},
        },
        {
            "id": "push_cache.param.tensor_num_per_layer.zero",
            "title": "tensor_num_per_layer 0 is rejected",
            "level": "should",
            "family": "param",
            "source": {"kind": "facts", "ref": "facts §1.2 #7"},
            "since": "8.3.RC1.alpha003",
            "cases": [
                {"name": "zero", "args": {"tensor_num_per_layer": 0, "src_layer_range": {"range": [0, "L"]}}},
            ],
            "expect": {"raises": ["LLMException"], "status": "LLM_PARAM_INVALID"},
        },
        {
            "id": "push_cache.data.layers.all",
            "title": "a default push copies every layer of the batch",
            "level": "must",
            "family": "data",
            "source": {"kind": "facts", "ref": "facts §3"},
            "until": "9.0.0",
            "requires": ["placements.DEVICE"],
            "scenario": {"link": True, "call": {"src_layer_range": {"range": [0, "L"]}}},
            "cases": [
                {"name": "default", "args": {}},
                {"name": "second_batch", "args": {"src_batch_index": 1,
                                                  "dst_cache_key": {"key": "CacheKeyByIdAndIndex", "batch": 1}}},
            ],
            "expect": {"outcome": "success", "post": "exact"},
        },
        {
            "id": "push_cache.timeout.delay",
            "title": "a transfer slower than sync_kv_timeout fails",
            "level": "may",
            "family": "timeout",
            "source": {"kind": "facts", "ref": "facts §1.3 N12"},
            "requires": ["faults.delay"],
            "deviation": None,
            "cases": [{"name": "slow", "args": {}, "scenario": {"fault": {"node": "local", "kind": "delay",
                                                                          "seconds": 0.6}}}],
            "expect": {"outcome": "any_of", "allowed": [
                {"raises": ["LLMException"], "status": "LLM_TIMEOUT"},
                {"outcome": "success"},
            ]},
        },
    ],
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes more than a few seconds (builds a wheel, makes a venv)")


@pytest.fixture
def mini_spec() -> dict[str, Any]:
    """A deep copy of the small valid spec, free to mutate."""
    return copy.deepcopy(MINI_SPEC)


@pytest.fixture
def write_spec(tmp_path: pathlib.Path) -> Callable[..., pathlib.Path]:
    """write_spec(data or text, name=...) -> path of a YAML file in tmp_path."""

    def write(data: dict[str, Any] | str, name: str = "push_cache.yaml") -> pathlib.Path:
        path = tmp_path / name
        text = data if isinstance(data, str) else yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def seed_pages() -> dict[str, str]:
    """Each documentation page's text by language; the tests that compare the spec with them skip, naming the
    folder, when it is not there."""
    if not SEEDS.is_dir():
        pytest.skip(f"the documentation seeds are not here ({SEEDS}); nothing to compare the spec with")
    return {lang: (SEEDS / name).read_text(encoding="utf-8") for lang, name in SEED_PAGES.items()}
