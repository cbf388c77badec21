"""The ``precision_data/`` layout (SPEC.md "Data layout"). A survey of what is in it, for the
shell's banner, is :mod:`.data_survey`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import PrecisionToolError


@dataclass(frozen=True)
class DataRoot:
    """Where each kind of data lives under a data root. Only ``temp`` is ever written."""

    path: Path

    @property
    def npu(self) -> Path:
        return self.path / "npu"

    def debug_dirs(self) -> list[Path]:
        """``npu/debug_0``, ``npu/debug_1``, ... in order."""
        if not self.npu.is_dir():
            return []
        return sorted(
            (p for p in self.npu.iterdir() if p.is_dir() and p.name.startswith("debug_")),
            key=lambda p: (len(p.name), p.name),
        )

    def dump_root(self, debug: str = "debug_0") -> Path:
        return self.npu / debug / "dump"

    def graph_dir(self, debug: str = "debug_0") -> Path:
        return self.npu / debug / "graph"

    @property
    def bench(self) -> Path:
        """``bench/``: the bench run (GPU, CPU or another NPU run) of an msprobe dump in ``npu/``."""
        return self.path / "bench"

    @property
    def golden_dir(self) -> Path:
        return self.path / "tf" / "dump"

    @property
    def overflow_root(self) -> Path:
        return self.path / "overflow" / "dump"

    @property
    def fusion_file(self) -> Path:
        return self.path / "fusion" / "fusion_result.json"

    @property
    def temp(self) -> Path:
        return self.path / "temp"


def require_data_root(path: str | os.PathLike) -> DataRoot:
    """The layout of the data root ``path``; a PrecisionToolError naming it when there is no
    such directory (every reader of the data root says so in these words)."""
    root = DataRoot(Path(path))
    if not root.path.is_dir():
        raise PrecisionToolError("no such data root (give --data DIR or set DATA_ROOT_DIR)", root.path)
    return root
