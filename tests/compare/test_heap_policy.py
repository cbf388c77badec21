"""heap_policy: a claimed process's heap serves blocks of a few hundred kilobytes itself and
keeps them when freed; an unclaimed one is left as the C library set it.

Checked in fresh interpreters against glibc's own accounting (``mallinfo2``: ``hblkhd`` is the
bytes in memory maps, ``keepcost`` the free top of the heap it could hand back), not against
the module's constants.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys

import pytest

_PROBE = r"""
import ctypes, json, sys

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "claimed":
    from precision_tool.compare.numba_line import claim_process
    claim_process()
before = libc.mallinfo2().hblkhd
mapped = []
for size in (300_000, 200_000, 600_000):  # reads of a golden, a dump file, a converted tensor
    block = bytearray(size)
    mapped.append(libc.mallinfo2().hblkhd - before)
    del block
print(json.dumps({"mapped": mapped, "kept": libc.mallinfo2().keepcost}))
"""


def _probe(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _glibc() -> bool:
    return sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "mallinfo2")


@pytest.mark.skipif(not _glibc(), reason="glibc's mallopt and mallinfo2 are what is set and read")
def test_a_claimed_process_serves_mid_size_blocks_from_its_heap_and_keeps_them():
    plain, claimed = _probe("plain"), _probe("claimed")
    assert plain["mapped"][0] >= 300_000  # glibc's first block that large: a memory map of its own
    assert max(claimed["mapped"]) <= 0  # from the heap, every one
    assert claimed["kept"] >= 600_000  # the freed top stays with the process


def test_keep_freed_memory_says_whether_the_c_library_took_it():
    """In a fresh interpreter, so this one's heap is left as it was: on glibc it is taken; where
    the module does nothing (not Linux) it says so."""
    code = "from precision_tool.compare.heap_policy import keep_freed_memory; print(keep_freed_memory())"
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    if _glibc():
        assert said == "True"
    elif not sys.platform.startswith("linux"):
        assert said == "False"
