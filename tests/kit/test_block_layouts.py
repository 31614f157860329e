"""The blocks layouts push_blocks' property clauses draw (conformance_tests/inputs/block_strategies.py): within the
spec's bounds, destination blocks distinct, every block inside its cache, one block the same bytes on both sides."""

from __future__ import annotations

import math

from hypothesis import given, settings

from conformance_tests.inputs.block_strategies import BlockLayout, block_layouts
from conformance_tests.inputs.strategies import domain
from conformance_tests.spec import Level, load_spec, operation_spec_path

SPEC = load_spec(operation_spec_path("push_blocks"))
DOM = domain(SPEC, Level.MUST, {"placements": ["HOST", "DEVICE"]}, SPEC.all_parameters())


@settings(max_examples=200, deadline=None)
@given(block_layouts(DOM))
def test_a_drawn_push_of_blocks_is_valid(layout: BlockLayout) -> None:
    src_n, dst_n = layout.src.shape[0], layout.dst.shape[0]
    assert DOM.batch[0] <= min(src_n, dst_n) and max(src_n, dst_n) <= DOM.batch[1]
    assert len(layout.src_blocks) == len(layout.dst_blocks) >= 1
    assert len(set(layout.dst_blocks)) == len(layout.dst_blocks)
    assert all(0 <= b < src_n for b in layout.src_blocks) and all(0 <= b < dst_n for b in layout.dst_blocks)
    assert math.prod(layout.src.shape[1:]) == math.prod(layout.dst.shape[1:])  # one block, the same bytes
    assert layout.src.num_tensors % layout.tnpl == 0
    if layout.layer_range is None:
        assert layout.dst.num_tensors == layout.src.num_tensors
    args = layout.args(SPEC.all_parameters(), SPEC.operation)
    assert set(args) == {"src_blocks", "dst_blocks", "src_layer_range", "dst_layer_range", "tensor_num_per_layer"}
    scenario = layout.scenario(SPEC.scenario)
    assert scenario.src.blocks and scenario.dst.blocks and scenario.dst.model_id == SPEC.scenario.dst.model_id
