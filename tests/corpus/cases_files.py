"""Corpus cases: the files around the tensors -- directories, permissions, links, names,
``mapping.csv`` and golden ``.npy`` files that break the rules."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from precision_tool.formats.dump_write import build_dump

from .base import (
    ERROR,
    FINE,
    RELU_FILE,
    ROW,
    TS,
    Case,
    Check,
    OpSpec,
    base_ops,
    f32,
    golden_dir,
    graph_path,
    input_value,
    relu_dump,
    relu_value,
    step_dir,
    write_golden_value,
    write_graph,
)

GOLDEN_RELU = f"net_relu.0.{TS}.npy"
LONG_OP = "net/" + "very_long_scope_name/" * 14 + "relu"  # 300+ characters
LONG_KEY = LONG_OP.replace("/", "_")
DUMP_ALIAS, GOLDEN_ALIAS = "1234567890", "9876543210"
UNICODE_OP = "网络/relu"


def _dir_for_dump(case_dir: Path) -> None:
    (step_dir(case_dir) / RELU_FILE).unlink()
    (step_dir(case_dir) / RELU_FILE).mkdir()


def _dir_for_golden(case_dir: Path) -> None:
    (golden_dir(case_dir) / GOLDEN_RELU).unlink()
    (golden_dir(case_dir) / GOLDEN_RELU).mkdir()


def _dir_for_graph(case_dir: Path) -> None:
    graph_path(case_dir).unlink()
    graph_path(case_dir).mkdir()


def _unreadable(which: str):
    def build(case_dir: Path) -> None:
        path = step_dir(case_dir) / RELU_FILE if which == "dump" else golden_dir(case_dir) / GOLDEN_RELU
        path.chmod(0)

    return build


def _symlink_loops(case_dir: Path) -> None:
    step, golden = step_dir(case_dir), golden_dir(case_dir)
    for directory, (a, b) in (
        (step, (f"Relu.net_loop.7.0.{TS + 70}", f"Relu.net_loop2.8.0.{TS + 80}")),
        (golden, (f"net_loop.0.{TS}.npy", f"net_loop2.0.{TS}.npy")),
    ):
        os.symlink(b, directory / a)
        os.symlink(a, directory / b)
    os.symlink("self", step.parent / "self")  # a directory entry that loops on itself
    os.symlink("..", step / "parent")  # a link back up the tree


def _spaces(case_dir: Path) -> None:
    step = step_dir(case_dir)
    os.rename(step / RELU_FILE, step / f"Relu.net relu.2.0.{TS + 20}")
    os.rename(golden_dir(case_dir) / GOLDEN_RELU, golden_dir(case_dir) / f"net relu.0.{TS}.npy")


def _unicode(case_dir: Path) -> None:
    write_graph(
        case_dir,
        base_ops()
        + [OpSpec(UNICODE_OP, "Relu", ["net/input:0"], base_ops()[1].input_descs, base_ops()[1].output_descs)],
    )
    (step_dir(case_dir) / f"Relu.网络_relu.4.0.{TS + 40}").write_bytes(
        build_dump(UNICODE_OP, [f32(input_value())], [f32(relu_value())], dump_time=TS + 40)
    )
    path = write_golden_value(case_dir, "net/unicode", relu_value())
    os.rename(path, path.with_name(f"网络_relu.0.{TS}.npy"))


def _long_names(case_dir: Path) -> None:
    ops = base_ops()
    write_graph(case_dir, ops + [OpSpec(LONG_OP, "Relu", ["net/input:0"], ops[1].input_descs, ops[1].output_descs)])
    step, golden = step_dir(case_dir), golden_dir(case_dir)
    (step / DUMP_ALIAS).write_bytes(build_dump(LONG_OP, [f32(input_value())], [f32(relu_value())], dump_time=TS + 50))
    (step / "mapping.csv").write_text(f"{DUMP_ALIAS},Relu.{LONG_KEY}.5.0.{TS + 50}\n")
    path = write_golden_value(case_dir, "net/long", relu_value())
    os.rename(path, golden / GOLDEN_ALIAS)
    (golden / "mapping.csv").write_text(f"{GOLDEN_ALIAS},{LONG_KEY}.0.{TS}.npy\n")
    # the longest name a file system takes, not aliased: a dump of an op the graph lacks
    op = "x" * (255 - len(f"Relu..9.0.{TS + 90}"))
    (step / f"Relu.{op}.9.0.{TS + 90}").write_bytes(relu_dump())


def _no_dots(case_dir: Path) -> None:
    step = step_dir(case_dir)
    (step / "nodots").write_bytes(relu_dump())
    (step / "garbage").write_bytes(b"\x00\x01 not a dump at all")
    (golden_dir(case_dir) / "nodots").write_bytes(b"\x93NUMPY garbage")


def _two_devices(case_dir: Path) -> None:
    step = step_dir(case_dir)
    other = step.parents[3] / "1" / step.relative_to(step.parents[3]).parts[1] / "1" / "0"
    shutil.copytree(step, other)
    (other / RELU_FILE).write_bytes(relu_dump(outputs=[f32(relu_value() * -1)]))


def _mapping(lines: str, alias_relu: str | None = None):
    def build(case_dir: Path) -> None:
        step = step_dir(case_dir)
        if alias_relu:
            os.rename(step / RELU_FILE, step / alias_relu)
        for name in ("333", "444"):  # files that bad lines point at: never resolved
            (step / name).write_bytes(relu_dump())
        (step / "mapping.csv").write_bytes(lines.encode("utf-8", "surrogateescape"))
        (golden_dir(case_dir) / "222").write_bytes((golden_dir(case_dir) / GOLDEN_RELU).read_bytes())
        (golden_dir(case_dir) / "mapping.csv").write_text(f"222,../../{GOLDEN_RELU}\n")

    return build


def _golden_bytes(edit):
    def build(case_dir: Path) -> None:
        path = golden_dir(case_dir) / GOLDEN_RELU
        path.write_bytes(edit(path.read_bytes()))

    return build


def _pickled(case_dir: Path) -> None:
    path = golden_dir(case_dir) / GOLDEN_RELU
    with open(path, "wb") as handle:  # the one writer that may pickle: making the bad file
        np.save(handle, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)


def _golden_array(array):
    return lambda case_dir: write_golden_value(case_dir, "net/relu", array)


def _npy_header(descr, shape, data_bytes: int):
    """net/relu's golden replaced by a .npy header of ``descr`` and ``shape`` followed by
    ``data_bytes`` zero bytes (a sparse file: gigabytes cost no disk)."""

    def build(case_dir: Path) -> None:
        path = golden_dir(case_dir) / GOLDEN_RELU
        with open(path, "wb") as handle:
            np.lib.format.write_array_header_1_0(handle, {"descr": descr, "fortran_order": False, "shape": shape})
            handle.truncate(handle.tell() + data_bytes)

    return build


def _bad_golden_names(case_dir: Path) -> None:
    golden = golden_dir(case_dir)
    os.rename(golden / GOLDEN_RELU, golden / f"net_relu.x.{TS}.npy")
    for name in ("net-relu.0.npy", "README", f"net_relu.0.{TS}.npy.bak", f"net.relu.0.{TS}.npy"):
        (golden / name).write_bytes(b"x")


DUMP = "{step}/" + RELU_FILE
GOLDEN = "{golden}/" + GOLDEN_RELU

CASES = [
    Case(
        "dir_where_dump_file_expected",
        "net/relu's dump file is a directory",
        _dir_for_dump,
        (
            Check("vc", ROW, "there is no dump file"),
            Check(f"pt {DUMP}", ERROR, "is a directory", RELU_FILE),
            Check(f"dc {DUMP}", ERROR, "no NPU dump files", RELU_FILE),
        ),
    ),
    Case(
        "dir_where_golden_expected",
        "net/relu's golden .npy is a directory",
        _dir_for_golden,
        (
            Check("vc", ROW, "no ground truth dump file for net/relu:output:0"),
            Check(f"pt {GOLDEN}", ERROR, "is a directory", GOLDEN_RELU),
        ),
    ),
    Case(
        "dir_where_graph_expected",
        "the Build graph is a directory",
        _dir_for_graph,
        (
            Check("vc", FINE, "paired by name (inputs not compared)"),
            Check("ls", FINE, "no Build graph"),
            Check("ni net/relu", ERROR, "no Build graph"),
        ),
    ),
    Case(
        "unreadable_dump",
        "net/relu's dump has mode 000",
        _unreadable("dump"),
        (
            Check("vc", ROW, "Permission denied"),
            Check(f"pt {DUMP}", ERROR, "Permission denied", RELU_FILE),
            Check(f"dc {DUMP}", ERROR, "Permission denied", RELU_FILE),
        ),
        unreadable=True,
    ),
    Case(
        "unreadable_golden",
        "net/relu's golden .npy has mode 000",
        _unreadable("golden"),
        (Check("vc", ROW, "Permission denied"), Check(f"pt {GOLDEN}", ERROR, "Permission denied", GOLDEN_RELU)),
        unreadable=True,
    ),
    Case(
        "symlink_loops",
        "dump and golden names that are symbolic-link loops, a looping dir link",
        _symlink_loops,
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check("pt {step}/Relu.net_loop.7.0." + str(TS + 70), ERROR, "symbolic link", "net_loop"),
            Check(f"pt {{golden}}/net_loop.0.{TS}.npy", ERROR, "symbolic link", "net_loop"),
            Check("dc {step}", FINE, "written"),
        ),
    ),
    Case(
        "names_with_spaces",
        "a dump and a golden file name with a space",
        _spaces,
        (
            Check("vc", ROW, "no ground truth dump file for net/relu:output:0"),
            Check(f"pt {{step}}/'Relu.net relu.2.0.{TS + 20}'", FINE, "net relu"),
            Check(f"pt {{golden}}/'net relu.0.{TS}.npy'", FINE, "elements"),
            Check(f"cp {{step}}/'Relu.net relu.2.0.{TS + 20}' {{golden}}/'net relu.0.{TS}.npy'", FINE, "allclose"),
        ),
    ),
    Case(
        "names_unicode",
        "an op, its dump and its golden file named in Chinese",
        _unicode,
        (
            Check("vc", ROW, f"no ground truth dump file for {UNICODE_OP}:output:0"),
            Check(f"pt {{golden}}/网络_relu.0.{TS}.npy", FINE, "elements"),
            Check(f"ni {UNICODE_OP} -s 1", FINE, "subgraph"),
            Check(f"dc {UNICODE_OP}", FINE, "written"),
        ),
    ),
    Case(
        "names_longer_than_255",
        "a 300-character op name, aliased through mapping.csv on both sides",
        _long_names,
        (
            Check("vc", FINE, "8 tensors compared, 1 not compared"),
            Check("pt {step}/" + DUMP_ALIAS, FINE, "elements"),
            Check("dc {step}/" + DUMP_ALIAS, FINE, "written"),
            Check(f"ni {LONG_OP} -s 1", FINE, "subgraph"),
            Check("pt {golden}/" + GOLDEN_ALIAS, FINE, "elements"),
        ),
    ),
    Case(
        "names_without_dots",
        "files called nodots and garbage among the dumps",
        _no_dots,
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check("pt {step}/nodots", FINE, "nodots:output:0"),
            Check("pt {step}/garbage", ERROR, "does not fit a file of 20 bytes", "garbage"),
            Check("pt {golden}/nodots", ERROR, "cannot load golden file", "nodots"),
        ),
    ),
    Case(
        "two_devices_same_file_names",
        "devices 0 and 1 hold files of the same names",
        _two_devices,
        (
            Check(
                "vc", FINE, "device 1, ge_default_20260101000000_1, step 0: 5 tensors compared, 0 not compared, 1 op(s)"
            ),
            Check("pt net/relu", ERROR, "ambiguous"),
            Check("dc net/relu", ERROR, "ambiguous"),
        ),
    ),
    Case(
        "mapping_missing_files",
        "mapping.csv names files that are not there",
        _mapping(f"555,{RELU_FILE}\n666,Relu.net_ghost.9.0.{TS}\n", alias_relu=None),
        (Check("vc", FINE, "5 tensors compared, 0 not compared"),),
    ),
    Case(
        "mapping_dotdot_paths",
        "mapping.csv targets with ../ and path separators",
        _mapping(f"333,../{RELU_FILE}\n444,..\\..\\{RELU_FILE}\n"),
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check("pt {step}/333", FINE, "333:output:0"),
            Check("pt tf:222", ERROR, "no NPU dump file or golden tensor matches"),
        ),
    ),
    Case(
        "mapping_bad_lines",
        "a BOM, CRLF, lines without comma, empty fields, non-UTF-8, duplicates",
        _mapping(
            f"\ufeff555,{RELU_FILE}\r\nno comma here\r\n,empty\r\n666,\r\n\udcff\udcfe,x\r\n555,{RELU_FILE}\r\n",
            alias_relu="555",
        ),
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check("pt npu:net/relu", FINE, f"{RELU_FILE}:output:0"),
        ),
    ),
    Case(
        "golden_pickled_object_array",
        "net/relu's golden is a pickled object array",
        _pickled,
        (
            Check("vc", ROW, "pickled Python objects"),
            Check(f"pt {GOLDEN}", ERROR, "pickled", GOLDEN_RELU),
            Check(f"cp {DUMP} {GOLDEN}", ERROR, "pickled", GOLDEN_RELU),
            Check("ni net/relu", FINE, "pickled"),
        ),
    ),
    Case(
        "golden_fortran_order",
        "net/relu's golden saved in Fortran order",
        _golden_array(np.asfortranarray(relu_value())),
        (Check("vc", FINE, "0 op(s) flagged"), Check(f"cp {DUMP} {GOLDEN}", FINE, "allclose")),
    ),
    Case(
        "golden_zero_size",
        "net/relu's golden has 0 elements",
        _golden_array(np.zeros((0, 3), np.float32)),
        (
            Check("vc", ROW, "Shape mismatch"),
            Check(f"pt {GOLDEN}", FINE, "elements"),
            Check(f"cp {DUMP} {GOLDEN}", ERROR, "cannot compare"),
        ),
    ),
    Case(
        "golden_truncated",
        "net/relu's golden .npy cut in its data",
        _golden_bytes(lambda data: data[:-5]),
        (Check("vc", ROW, "truncated"), Check(f"pt {GOLDEN}", ERROR, "truncated", GOLDEN_RELU)),
    ),
    Case(
        "golden_bad_magic",
        "net/relu's golden .npy does not start with the npy magic",
        _golden_bytes(lambda data: b"PK" + data[2:]),
        (Check("vc", ROW, "not a .npy file"), Check(f"pt {GOLDEN}", ERROR, "not a .npy file", GOLDEN_RELU)),
    ),
    Case(
        "golden_void_2gib_elements",
        "net/relu's golden holds one |V2147483647 element (2 GiB of bytes)",
        _npy_header("|V2147483647", (1,), 2**31 - 1),
        (
            Check("vc", ROW, "raw bytes (|V2147483647) of no numeric type, not a tensor of numbers"),
            Check(f"pt {GOLDEN}", ERROR, "raw bytes (|V2147483647)", GOLDEN_RELU),
            Check("ni net/relu", FINE, "raw bytes"),
        ),
    ),
    Case(
        "golden_structured",
        "net/relu's golden is a structured array of two fields",
        _golden_array(np.zeros((2, 3), [("a", "<f4"), ("b", "<i4")])),
        (
            Check("vc", ROW, "a structured data type (2 field(s), 8 bytes a record), not a tensor"),
            Check(f"pt {GOLDEN}", ERROR, "structured data type", GOLDEN_RELU),
            Check(f"cp {DUMP} {GOLDEN}", ERROR, "structured data type", GOLDEN_RELU),
        ),
    ),
    Case(
        "golden_shape_too_big",
        "net/relu's golden claims shape [2**61] of float32",
        _npy_header("<f4", (2**61,), 24),
        (
            Check("vc", ROW, "shape [2305843009213693952] of 4-byte elements is too big for any array"),
            Check(f"pt {GOLDEN}", ERROR, "too big for any array", GOLDEN_RELU),
            Check(f"cp {DUMP} {GOLDEN}", ERROR, "too big for any array", GOLDEN_RELU),
        ),
    ),
    Case(
        "golden_names_breaking_the_pattern",
        "golden names without a timestamp, with dots, a .bak",
        _bad_golden_names,
        (
            Check("vc", ROW, "no ground truth dump file for net/relu:output:0"),
            Check(f"pt {{golden}}/net_relu.x.{TS}.npy", FINE, "elements"),
        ),
    ),
]
