"""sides: a small C-order .npy is read with its header in one open, a larger one is opened from
its header alone, other files are mapped; a small dump file is read whole, once a job.

Expected offsets come from the file size and the saved array's byte count; expected values from
the array that was saved.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from precision_tool.compare import sides
from precision_tool.compare.golden_pairing import NpySide
from precision_tool.compare.load import ArrayBlocks, Buffers, FileRegion
from precision_tool.compare.metrics import select_metrics
from precision_tool.compare.pair_compare import compare_sources
from precision_tool.compare.sides import open_npy_side
from precision_tool.errors import PrecisionToolError
from precision_tool.formats import golden


def _values(source) -> np.ndarray:
    return np.concatenate([b.copy() for b in source.blocks(5, Buffers(), "x")])


def test_small_c_order_file_is_read_with_its_header(tmp_path):
    array = np.arange(24, dtype=">f4").reshape(2, 3, 4)  # a byte order other than this machine's
    np.save(tmp_path / "g.npy", array)
    source = open_npy_side(NpySide(tmp_path / "g.npy"))
    assert isinstance(source, ArrayBlocks) and not source.array.flags.writeable
    assert source.shape == (2, 3, 4) and source.dtype == np.dtype(">f4") and source.dtype_name == "float32"
    assert source.nbytes == os.path.getsize(tmp_path / "g.npy")
    np.testing.assert_array_equal(_values(source), array.ravel())


def test_small_file_cut_after_it_was_sized_is_one_line(tmp_path, monkeypatch):
    np.save(tmp_path / "g.npy", np.arange(100_000, dtype=np.float32))
    opened = golden.open_regular_descriptor

    def cut_after_fstat(path, kind):
        found = opened(path, kind)  # the descriptor and its fstat: the size read whole
        path.write_bytes(path.read_bytes()[:-8])  # the writer was still writing
        return found

    monkeypatch.setattr(golden, "open_regular_descriptor", cut_after_fstat)
    with pytest.raises(PrecisionToolError) as caught:
        open_npy_side(NpySide(tmp_path / "g.npy"))
    assert "truncated since its header was read" in str(caught.value) and "\n" not in str(caught.value)


def test_larger_c_order_file_is_a_region_of_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sides, "SMALL_NPY_BYTES", 64)  # smaller than this file: read block by block
    array = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.save("g.npy", array)
    source = open_npy_side(NpySide(tmp_path.joinpath("g.npy").relative_to(tmp_path)))
    assert isinstance(source, FileRegion)
    assert source.path == tmp_path / "g.npy" and source.path.is_absolute()
    assert source.offset == os.path.getsize("g.npy") - array.nbytes
    assert source.shape == (2, 3, 4) and source.dtype == np.float32 and source.dtype_name == "float32"
    assert source.nbytes == os.path.getsize("g.npy")
    np.testing.assert_array_equal(_values(source), array.ravel())


def test_fortran_order_and_empty_files_are_mapped(tmp_path):
    array = np.asfortranarray(np.arange(12, dtype=np.float16).reshape(3, 4))
    np.save(tmp_path / "f.npy", array)
    np.save(tmp_path / "e.npy", np.zeros((0, 3), np.float32))
    fortran = open_npy_side(NpySide(tmp_path / "f.npy"))
    assert isinstance(fortran, ArrayBlocks)
    np.testing.assert_array_equal(_values(fortran), np.ascontiguousarray(array).ravel())
    empty = open_npy_side(NpySide(tmp_path / "e.npy"))
    assert empty.size == 0 and empty.shape == (0, 3)


def test_truncated_and_text_files_are_one_line_errors(tmp_path):
    np.save(tmp_path / "t.npy", np.zeros(100, np.float32))
    data = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[:-8])
    np.save(tmp_path / "u.npy", np.array(["a", "b"]))
    for name, words in (("t.npy", "truncated"), ("u.npy", "is not compared")):
        with pytest.raises(PrecisionToolError) as caught:
            open_npy_side(NpySide(tmp_path / name))
        assert words in str(caught.value) and "\n" not in str(caught.value)


# --- small dump files: read whole, once per job ---------------------------------------------------


def _three_tensor_dump(path):
    from precision_tool.formats.dump_write import TensorSpec, write_dump

    arrays = [np.arange(n, dtype=np.float32) * (i + 1) for i, n in enumerate((6, 10, 4))]
    return write_dump(
        path, "op", [TensorSpec(arrays[0], "FLOAT")], [TensorSpec(a, "FLOAT") for a in arrays[1:]]
    ), arrays


def test_a_small_dump_file_is_opened_once_for_its_header_and_all_its_data(tmp_path, monkeypatch):
    from precision_tool.compare.golden_pairing import DumpSide
    from precision_tool.formats import dump as dump_module
    from precision_tool.formats import dump_tensor

    path, arrays = _three_tensor_dump(tmp_path / "Op.op.1.0.1700000000000000")
    opened = []
    for module, name in (
        (dump_tensor, "open_regular"),  # a tensor's own mapping of the file
        (dump_module, "open_regular_descriptor"),
        (sides, "open_regular_descriptor"),
    ):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda p, *a, _real=real, **k: opened.append(p) or _real(p, *a, **k))
    reads = sides.ReadCache()
    dump_sides = [DumpSide(path, "input", 0), DumpSide(path, "output", 0), DumpSide(path, "output", 1)]
    for side, array in zip(dump_sides, arrays):
        source = sides.open_dump_side(side, reads)
        assert isinstance(source, ArrayBlocks)
        np.testing.assert_array_equal(_values(source), array)
    assert opened == [path]  # one read: the header parsed from the bytes every tensor is viewed in


def test_a_large_dump_file_is_sized_once_and_its_header_read_once(tmp_path, monkeypatch):
    from precision_tool.compare.golden_pairing import DumpSide
    from precision_tool.formats import dump as dump_module

    path, arrays = _three_tensor_dump(tmp_path / "Op.op.1.0.1700000000000000")
    monkeypatch.setattr(sides, "SMALL_DUMP_BYTES", 64)  # this file is a large one now
    sized, headed = [], []
    real_sized, real_headed = sides.open_regular_descriptor, dump_module.open_regular_descriptor
    monkeypatch.setattr(sides, "open_regular_descriptor", lambda p, *a: sized.append(p) or real_sized(p, *a))
    monkeypatch.setattr(dump_module, "open_regular_descriptor", lambda p, *a: headed.append(p) or real_headed(p, *a))
    reads = sides.ReadCache()
    dump_sides = [DumpSide(path, "input", 0), DumpSide(path, "output", 0), DumpSide(path, "output", 1)]
    for side, array in zip(dump_sides, arrays):
        np.testing.assert_array_equal(_values(sides.open_dump_side(side, reads)), array)
    assert sized == [path] and headed == [path]  # each tensor's data is then read from the file itself


def test_a_small_dump_file_cut_after_its_header_was_read_is_a_one_line_error(tmp_path):
    from precision_tool.compare.golden_pairing import DumpSide

    path, _ = _three_tensor_dump(tmp_path / "Op.op.1.0.1700000000000000")
    reads = sides.ReadCache()
    reads.tensors(path)  # the header, read while the file was whole
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(PrecisionToolError) as caught:
        sides.open_dump_side(DumpSide(path, "output", 1), reads)
    assert "truncated" in str(caught.value) and "\n" not in str(caught.value)
    assert str(path) in str(caught.value) or path.name in str(caught.value)


def test_the_pt_files_of_every_job_of_a_process_share_its_reader_so_a_shared_pickle_is_read_once(tmp_path, monkeypatch):
    from precision_tool.compare.golden_pairing import TensorFileSide
    from precision_tool.formats import torch_file
    from tests.formats.test_torch_file import two_files_sharing_a_pickle

    first, second, runs = two_files_sharing_a_pickle(tmp_path, monkeypatch)
    monkeypatch.setattr(torch_file, "PROCESS_READER", torch_file.PtReader())  # a fresh process
    reads = sides.ReadCache()  # one job
    values = [_values(sides.open_side(TensorFileSide(p, "torch.float32"), reads)).tolist() for p in (first, second)]
    assert values == [[1, 2, 3], [4, 5, 6]] and runs == [first]
    # another job (a job is one pair): the memo outlives it
    assert _values(sides.open_side(TensorFileSide(second, "torch.float32"), sides.ReadCache())).tolist() == [4, 5, 6]
    assert runs == [first]


def test_a_golden_read_lately_is_served_again_without_an_open_and_an_old_one_is_read_again(tmp_path, monkeypatch):
    from precision_tool.formats import golden as golden_module

    arrays = [np.full((3, 4), k, np.float32) for k in range(sides.KEPT_FILES + 1)]
    paths = []
    for k, array in enumerate(arrays):
        paths.append(tmp_path / f"g{k}.npy")
        np.save(paths[-1], array)
    opened = []
    real = golden_module.open_regular_descriptor
    monkeypatch.setattr(golden_module, "open_regular_descriptor", lambda p, *a: opened.append(p) or real(p, *a))
    reads = sides.ReadCache()
    for path, array in zip(paths, arrays):  # the last read pushes the first out
        np.testing.assert_array_equal(_values(open_npy_side(NpySide(path), reads=reads)), array.ravel())
    for path, array in zip(paths[1:], arrays[1:]):  # the kept ones, from memory
        np.testing.assert_array_equal(_values(open_npy_side(NpySide(path), reads=reads)), array.ravel())
    assert opened == paths
    np.testing.assert_array_equal(_values(open_npy_side(NpySide(paths[0]), reads=reads)), arrays[0].ravel())
    assert opened == paths + [paths[0]]


def test_a_large_golden_is_not_kept(tmp_path, monkeypatch):
    from precision_tool.formats import golden as golden_module

    np.save(tmp_path / "big.npy", np.zeros(sides.SMALL_NPY_BYTES // 4 + 1, np.float32))
    opened = []
    real = golden_module.open_regular_descriptor
    monkeypatch.setattr(golden_module, "open_regular_descriptor", lambda p, *a: opened.append(p) or real(p, *a))
    reads = sides.ReadCache()
    for _ in range(2):
        assert isinstance(open_npy_side(NpySide(tmp_path / "big.npy"), reads=reads), FileRegion)
    assert len(opened) == 2


def test_each_thread_has_its_own_buffers():
    """A Dask worker started with several threads runs calls at once in one process: a role's
    buffer is its thread's, and kept between calls within the thread."""
    buffers = Buffers()
    mine = buffers.get("x", 1000, np.float32)
    assert np.shares_memory(mine, buffers.get("x", 500, np.float32))  # reused within a thread
    with ThreadPoolExecutor(1) as pool:
        theirs = pool.submit(buffers.get, "x", 1000, np.float32).result()
    assert not np.shares_memory(mine, theirs)


def test_pairs_compared_in_threads_at_once_get_their_own_values(tmp_path, monkeypatch):
    """Pairs streamed block by block through the process's buffers in four threads at once,
    threads switched as often as the interpreter can: each cosine is numpy's of its own two
    arrays (with one buffer for all threads a block would be overwritten by another pair's)."""
    monkeypatch.setattr(sides, "SMALL_NPY_BYTES", 64)  # every golden read block by block
    rng = np.random.default_rng(7)
    pairs = []
    for k in range(16):
        x, y = rng.standard_normal(4000), rng.standard_normal(4000) + (k % 4) * rng.standard_normal(4000)
        np.save(tmp_path / f"x{k}.npy", x.astype(np.float32))
        np.save(tmp_path / f"y{k}.npy", y.astype(np.float32))
        x32, y32 = x.astype(np.float32).astype(np.float64), y.astype(np.float32).astype(np.float64)
        pairs.append((k, float(x32 @ y32 / np.sqrt((x32 @ x32) * (y32 @ y32)))))

    def cosine(k: int) -> float:
        x = open_npy_side(NpySide(tmp_path / f"x{k}.npy"))
        y = open_npy_side(NpySide(tmp_path / f"y{k}.npy"))
        assert isinstance(x, FileRegion)
        result, _ = compare_sources(x, y, select_metrics("0"), chunk=64, numba=False)
        return result.numbers["CosineSimilarity"]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(4) as pool:
            found = list(pool.map(cosine, [k for k, _ in pairs] * 4))
    finally:
        sys.setswitchinterval(interval)
    for got, (_, want) in zip(found, pairs * 4):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-9)
