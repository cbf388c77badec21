"""The pieces every corpus case is made of: a small network, its expectations, the writers.

Each case is its own data root, ``{corpus}/{case}/precision_data``, holding a three-op network
written by the project's writers (``dump_write``, ``golden.write_golden``, ``graph_write``):

    net/input (Data, no dump) -> net/relu (Relu) -> net/add (Add, also reads net/input)

with golden tensors for all three. A case then breaks one thing (usually net/relu's dump file)
and says what each command must do about it. net/add stays intact, so every ``vc`` row check
also proves that the run went on past the broken file.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from precision_tool.formats.dump_write import TensorSpec, build_dump
from precision_tool.formats.golden import write_golden
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text

ROW, ERROR, FINE = "row", "error", "fine"
RUN = "20260101000000"
MODEL = f"ge_default_{RUN}_1"
STEP_REL = f"npu/debug_0/dump/{RUN}/0/{MODEL}/1/0"
GRAPH_REL = "npu/debug_0/graph/ge_proto_00000001_Build.txt"
GOLDEN_REL = "tf/dump"
TS = 1767225600000000  # 16-digit microsecond timestamps, as the dumpers write them
RELU_FILE = f"Relu.net_relu.2.0.{TS + 20}"
ADD_FILE = f"Add.net_add.3.0.{TS + 30}"
SHAPE = (2, 3)


@dataclass(frozen=True)
class Check:
    """One command on a case and the outcome it must get.

    ``line`` may use ``{root}`` (the data root), ``{case}`` (the case directory), ``{step}``
    (the step directory) and ``{golden}``, which are filled in shell-quoted (the corpus may sit
    in a directory with spaces), so quote the rest of a word on its own: ``{step}/'a b'``.
    Outcomes: ``row`` (the run finishes with status 0 or 1 and a CSV row's CompareFailReason
    contains ``text``), ``error`` (exit status 2 and exactly one line starting ``error:`` that
    contains ``text`` and ``names``), ``fine`` (status 0 or 1, no error line, ``text`` in the
    output).
    """

    line: str
    outcome: str
    text: str = ""
    names: str = ""  # ERROR: the file (or directory) the error line must name

    def fill(self, case_dir: Path) -> Check:
        """This check with the placeholders filled in (shell-quoted in ``line``)."""
        values = paths(case_dir)
        quoted = {key: shlex.quote(value) for key, value in values.items()}
        return Check(self.line.format(**quoted), self.outcome, self.text, self.names.format(**values))


@dataclass(frozen=True)
class Case:
    """A bad or odd input: how to make it and what every command must do with it."""

    name: str
    about: str
    build: Callable[[Path], None]  # gets the case directory; the base network is already there
    checks: tuple[Check, ...]
    base: bool = True  # write the base network first
    unreadable: bool = False  # holds a mode-000 file: simulated when running as root
    summarise: bool = True  # run vcs on what each vc wrote (off for the 100k-row result)


def paths(case_dir: Path) -> dict[str, str]:
    root = case_dir / "precision_data"
    return {"case": str(case_dir), "root": str(root), "step": str(root / STEP_REL), "golden": str(root / GOLDEN_REL)}


def root_of(case_dir: Path) -> Path:
    return case_dir / "precision_data"


def step_dir(case_dir: Path) -> Path:
    return root_of(case_dir) / STEP_REL


def golden_dir(case_dir: Path) -> Path:
    return root_of(case_dir) / GOLDEN_REL


def graph_path(case_dir: Path) -> Path:
    return root_of(case_dir) / GRAPH_REL


# --- the base network -----------------------------------------------------------------------


def values(seed: int, shape=SHAPE, dtype=np.float32) -> np.ndarray:
    """Deterministic non-zero test data."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 0.1).astype(dtype)


def input_value() -> np.ndarray:
    return values(1)


def relu_value() -> np.ndarray:
    return np.maximum(input_value(), 0)


def add_value() -> np.ndarray:
    return relu_value() + input_value()


def f32(array: np.ndarray, **kw) -> TensorSpec:
    return TensorSpec(np.asarray(array, np.float32), "FLOAT", **kw)


def base_ops() -> list[OpSpec]:
    desc = tensor_desc("DT_FLOAT", "ND", SHAPE, origin_format="ND", origin_shape=SHAPE)
    return [
        OpSpec("net/input", "Data", input_descs=[desc], output_descs=[desc]),
        OpSpec("net/relu", "Relu", ["net/input:0"], [desc], [desc]),
        OpSpec("net/add", "Add", ["net/relu:0", "net/input:0"], [desc, desc], [desc]),
    ]


def write_graph(case_dir: Path, ops: list[OpSpec] | None = None) -> Path:
    path = graph_path(case_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_graph_text(build_model(ops or base_ops(), name=MODEL), path)


def relu_dump(inputs=None, outputs=None) -> bytes:
    """The bytes of net/relu's dump; by default correct data."""
    inputs = [f32(input_value())] if inputs is None else inputs
    outputs = [f32(relu_value())] if outputs is None else outputs
    return build_dump("net/relu", inputs, outputs, dump_time=TS + 20)


def write_relu(case_dir: Path, data: bytes, name: str = RELU_FILE) -> Path:
    """Replace net/relu's dump file (under ``name``) with ``data``."""
    directory = step_dir(case_dir)
    (directory / RELU_FILE).unlink(missing_ok=True)
    path = directory / name
    path.write_bytes(data)
    return path


def write_golden_value(case_dir: Path, name: str, array: np.ndarray, index: int = 0) -> Path:
    directory = golden_dir(case_dir)
    for old in directory.glob(f"{name.replace('/', '_')}.{index}.*.npy"):
        old.unlink()
    return write_golden(directory, name, index, TS, array)


def write_base(case_dir: Path) -> None:
    """The intact three-op network: graph, dumps of net/relu and net/add, golden tensors."""
    write_graph(case_dir)
    directory = step_dir(case_dir)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / RELU_FILE).write_bytes(relu_dump())
    add = build_dump("net/add", [f32(relu_value()), f32(input_value())], [f32(add_value())], dump_time=TS + 30)
    (directory / ADD_FILE).write_bytes(add)
    for name, array in (("net/input", input_value()), ("net/relu", relu_value()), ("net/add", add_value())):
        write_golden(golden_dir(case_dir), name, 0, TS, array)


def make_case(corpus: Path, case: Case) -> Path:
    """Write one case into ``corpus/{case.name}``; returns the case directory."""
    case_dir = corpus / case.name
    root_of(case_dir).mkdir(parents=True, exist_ok=True)
    if case.base:
        write_base(case_dir)
    case.build(case_dir)
    return case_dir


def manifest(cases: list[Case]) -> str:
    """The cases and their expected outcomes as JSON, for people reading the corpus."""
    return json.dumps(
        [
            {
                "case": c.name,
                "about": c.about,
                "checks": [{"command": k.line, "outcome": k.outcome, "text": k.text} for k in c.checks],
            }
            for c in cases
        ],
        indent=2,
    )
