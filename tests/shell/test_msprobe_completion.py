"""Completion on an msprobe data root: call keys as op names, call types for ``ls -t``, and
msprobe's tensor names for ``pt``/``cp``."""

from __future__ import annotations

import numpy as np

from precision_tool.shell.completer import graph_and_dump_op_names, graph_op_types, tensor_file_names
from tests.compare.msprobe_trees import write_rank
from tests.conftest import make_context

KEYS = ["Functional.conv2d.0.forward", "Tensor.add.0.forward"]


def test_op_and_tensor_names_are_the_calls_and_their_tensors(tmp_path):
    root = tmp_path / "precision_data"
    a = np.ones((2, 2), np.float32)
    write_rank(root / "npu" / "step0" / "rank0", [(KEYS[0], [a], [a * 2]), (KEYS[1], [a * 2, a], [a * 3])])
    context, _ = make_context(root)
    assert graph_and_dump_op_names(context) == KEYS
    assert graph_op_types(context) == ["Functional.conv2d", "Tensor.add"]
    assert tensor_file_names(context) == [
        f"{KEYS[0]}.input.0",
        f"{KEYS[0]}.output.0",
        f"{KEYS[1]}.input.0",
        f"{KEYS[1]}.input.1",
        f"{KEYS[1]}.output.0",
    ]
