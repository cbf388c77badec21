"""msprobe's ``-dm`` tensor mapping file: what we write a YAML loader reads back (the loader
msprobe uses is the reference), and what users hand-edit we read the way the loader does."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.msprobe_mapping import mapping_text, parse_mapping, read_mapping_file

_names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_names, _names), max_size=8, unique_by=lambda p: p[0]))
def test_what_we_write_a_yaml_loader_and_our_reader_read_back(pairs):
    text = mapping_text(pairs)
    assert (yaml.safe_load(text) or {}) == dict(pairs)
    assert parse_mapping(text) == dict(pairs)


HAND_EDITED = """---
# pairs fixed by hand
Functional.linear.0.forward.input.0: Functional.linear.1.forward.input.0
Tensor.__add__.3.forward.output.0: 'Tensor.__add__.4.forward.output.0'  # moved by one
"Module.layers.0.attn.Attention.forward.0.input.0": "Module.layers.0.self_attn.Attention.forward.0.input.0"

'it''s': "a\\tb"
Functional.linear.0.forward.input.0: Functional.linear.2.forward.input.0
"""


def test_a_hand_edited_file_reads_as_the_yaml_loader_reads_it():
    assert parse_mapping(HAND_EDITED) == yaml.safe_load(HAND_EDITED)  # the last value wins too
    assert parse_mapping(HAND_EDITED)["Functional.linear.0.forward.input.0"].endswith("2.forward.input.0")


@pytest.mark.parametrize(
    "text, words",
    [
        ("a:\n  b: c\n", "line 1: no bench name"),
        ("  a: b\n", "line 1: indented"),
        ("- a\n", "line 1: not a 'NPU_NAME: BENCH_NAME' line"),
        ("a: [b, c]\n", "line 1: '[b, c]' is not a plain name"),
        ("a: &x b\n", "is not a plain name"),
        ('"a: b\n', "unterminated double-quoted"),
        ("'a': b c: d\n", "line 1"),
        ("just a line\n", "line 1: not a 'NPU_NAME: BENCH_NAME' line"),
    ],
)
def test_anything_but_a_flat_mapping_is_one_line_naming_the_line(text, words, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(PrecisionToolError) as caught:
        read_mapping_file(path)
    message = str(caught.value)
    assert words in message and str(path) in message and "\n" not in message


def test_a_file_that_is_not_utf8_or_not_regular_is_one_line(tmp_path):
    bad = tmp_path / "m.yaml"
    bad.write_bytes(b"\xff\xfe: x\n")
    with pytest.raises(PrecisionToolError, match="not UTF-8"):
        read_mapping_file(bad)
    with pytest.raises(PrecisionToolError):
        read_mapping_file(tmp_path)
