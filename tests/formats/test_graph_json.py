"""The graph cache's JSON form of a model (:mod:`precision_tool.formats.graph_json`).

The reference for a round trip is the model the readers make: random ``ModelDef`` messages
(made through protobuf from the schema, as the fast reader's property tests make them) and the
real graphs of tests/data/real, converted by :func:`~precision_tool.formats.graph.model_from_proto`
or read by :func:`~precision_tool.formats.graph.load_graph`, must come back from their JSON as
equal models; where a NaN makes ``==`` fail on equal values, their ``repr`` (dataclasses' own,
which tells ``1`` from ``True``, ``b"a"`` from ``"a"``, a tuple from a list and ``-0.0`` from
``0.0``) must be the same.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.graph import load_graph, model_from_proto
from precision_tool.formats.graph_json import model_from_json, model_to_json
from precision_tool.formats.graph_model import Model, TensorDesc

from .test_graph_text_fast_props import models

REAL = Path(__file__).resolve().parents[1] / "data" / "real"


def _same(back: Model, model: Model) -> None:
    assert repr(back) == repr(model)
    if "nan" not in repr(model):
        assert back == model


def _loadable_graphs() -> list[Path]:
    found = []
    for path in sorted(p for p in REAL.rglob("*") if p.is_file()):
        try:
            load_graph(path)
        except (PrecisionToolError, ValueError, OSError):
            continue
        found.append(path)
    return found


REAL_GRAPHS = _loadable_graphs()


def test_there_are_real_graphs_to_read():
    assert len(REAL_GRAPHS) >= 3, REAL_GRAPHS


@pytest.mark.parametrize("path", REAL_GRAPHS, ids=lambda p: str(p.relative_to(REAL)))
def test_a_real_graph_comes_back_from_its_json_as_read(path):
    model, _ = load_graph(path)
    back = model_from_json(model_to_json(model), path)
    _same(back, model)
    assert back.source_path == path
    for graph, again in zip(model.graphs, back.graphs):  # the consumers are found again
        assert [op.consumers for op in again.ops] == [op.consumers for op in graph.ops]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=models())
def test_a_converted_model_comes_back_from_its_json(message):
    try:
        model = model_from_proto(message)
    except PrecisionToolError:  # two ops of one name, an op without one: no model to keep
        return
    _same(model_from_json(model_to_json(model)), model)


def _desc(attrs: dict) -> TensorDesc:
    return TensorDesc("DT_FLOAT", "NCHW", (1, 2), None, None, None, None, None, attrs, "t")


_VALUES = st.recursive(
    st.text() | st.integers(-(1 << 70), 1 << 70) | st.floats() | st.booleans() | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.just("\x00b"), inner, max_size=3)
        | st.dictionaries(st.text(max_size=3), inner, max_size=2).map(_desc)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(attrs=st.dictionaries(st.text(max_size=4) | st.sampled_from(["\x00b", "\x00d", "\x00m", "\x00"]), _VALUES))
def test_every_kind_of_attribute_value_comes_back(attrs):
    """Text (lone surrogates too), big integers, every float, bools, bytes, lists, dicts whose
    keys look like the form's tags, and tensor descs nested in any of them."""
    model = Model("m", [], attrs, None, 3, "v")
    _same(model_from_json(model_to_json(model)), model)


def test_the_json_is_plain_ascii_and_names_its_format():
    model = Model("m", [], {"f": math.nan, "é": b"\xff"}, None)
    data = model_to_json(model)
    assert data.isascii() and json.loads(data)["format"] == 1


@pytest.mark.parametrize("value", [(1, 2), {1, 2}, object(), {1: "a"}])
def test_a_value_without_a_json_form_is_refused_not_written_wrong(value):
    with pytest.raises(TypeError):
        model_to_json(Model("m", [], {"a": [value]}, None))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b"[]",
        b'{"format": 2}',
        b'{"format": 1}',
        b'{"format": 1, "name": "m", "version": 0, "custom_version": "", "attrs": {}, "graphs": [{"ops": [[]]}]}',
        b'{"format": 1, "name": "m", "version": 0, "custom_version": "", "attrs": {"a": {"\\u0000z": 1}}, '
        b'"graphs": []}',
        b"[" * 100_000,
    ],
    ids=["empty", "cut", "a list", "another format", "no fields", "an op of no fields", "unknown tag", "deep"],
)
def test_what_is_not_the_form_raises_what_the_cache_catches(data):
    with pytest.raises((ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError)):
        model_from_json(data)
