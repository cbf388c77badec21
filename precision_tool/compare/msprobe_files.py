"""What ``vc`` writes for msprobe dumps besides its result CSVs, in ``msprobe/`` of the result
directory: per rank pair the pairing it used as msprobe's tensor mapping file
(``mapping_{tag}.yaml``, for ``vc --mapping`` and ``msprobe compare -dm``), and the rows in
msprobe's own compare-result columns (``compare_result_{tag}.csv``), so users can diff them
with the results they had.

The columns are msprobe's, in its order, for the dump's task: tensor (``Cosine`` ...
``Five Thousandths Err Ratio``), statistics (``Max diff`` ... ``NormRelativeErr``) or md5
(``NPU MD5``, ``BENCH MD5``). A metric cell holds our value when the row computed it under
msprobe's name (as computed, at msprobe's precision: not the result CSV's six decimals), else
msprobe's text for it (``unsupported``, ``Nan``, ``shape unmatched``, ``N/A``); the statistics
come from ``dump.json``; ``Result`` and ``Err_message`` are msprobe's per-call verdict
(:func:`.msprobe_result.judge_api`). The lines are made from the rows as the run yields them
(:class:`MsprobeLines`), not read back from the result CSV. Like msprobe's, the CSV has a line
for each of a call's other arguments too (an ``int``, a ``str``, ``None``, a ``torch.Size``:
:mod:`.msprobe_values`), and a call's lines are in msprobe's order (inputs, parameters,
outputs). As msprobe's compare does, the table ends with ``NPU_Stack_Info`` (the call's stack
from ``stack.json``, on its first line) when the NPU dump has one, and ``Data_name`` (both
sides' tensor files) in tensor mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import PrecisionToolError
from ..formats.msprobe_leaves import Tensor
from ..formats.msprobe_mapping import mapping_text
from ..formats.msprobe_side import read_stack
from ..formats.output_root import OutputRoot
from .msprobe_metrics import UNSUPPORTED, text_cell
from .msprobe_result import ApiRow, judge_api, shape_text
from .msprobe_stats import DIFF_COLUMNS, RELATIVE_COLUMNS, Summary, compare_summaries
from .msprobe_stats import NA as N_A
from .msprobe_table import TableText, cell_text
from .msprobe_values import ValuePair, ValueSide, listed, msprobe_order, value_pair
from .result import CompareRow

MSPROBE_DIR = "msprobe"
BASIC = [
    "NPU Name",
    "Bench Name",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "NPU Requires_grad",
    "Bench Requires_grad",
]
TENSOR_METRICS = [
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
]
SUMMARY = ["NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm"]
EXTRACT = ["Requires_grad Consistent", "Result", "Err_message"]
MODE_COLUMNS = {
    "tensor": TENSOR_METRICS,
    "statistics": [*DIFF_COLUMNS, *RELATIVE_COLUMNS],
    "md5": ["NPU MD5", "BENCH MD5"],
}
STACK, DATA_NAME = "NPU_Stack_Info", "Data_name"
NO_FILE = "-1"  # msprobe's Data_name of a line with no tensor file
_TEXT = frozenset({"NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "Err_message", STACK, DATA_NAME})


def header(mode: str, stack: bool = False) -> list[str]:
    """msprobe's columns for ``mode`` (``tensor``, ``statistics``, ``md5``); ``stack``: the NPU
    dump has a ``stack.json``, which msprobe's compare shows (``NPU_Stack_Info``)."""
    summary = SUMMARY if mode != "md5" else []
    return BASIC + MODE_COLUMNS[mode] + summary + EXTRACT + [STACK] * stack + [DATA_NAME] * (mode == "tensor")


def _grad_cell(value: bool | None) -> str:
    return N_A if value is None else str(value)


def _summary(tensor: Tensor | ValueSide | None) -> Summary | None:
    """A side's statistics as msprobe reads them: as the file has them (``Tensor.written``)."""
    if tensor is None:
        return None
    written = getattr(tensor, "written", None)
    return Summary(*written) if written is not None else Summary(tensor.max, tensor.min, tensor.mean, tensor.norm)


def _metric_values(mode: str, row: CompareRow, pair) -> list:
    """The row's metric columns for ``mode``: in tensor mode the numbers, where a column has
    none msprobe's text (:func:`~.msprobe_metrics.text_cell`; the judge reads numbers and
    skips texts); else the cells."""
    if mode == "tensor":
        return [_tensor_value(row, pair, name) for name in TENSOR_METRICS]
    if mode == "statistics":
        return list(compare_summaries(_summary(pair.npu), _summary(pair.bench)).columns().values())
    return [pair.npu.md5 or N_A, pair.bench.md5 if pair.bench is not None and pair.bench.md5 else N_A]


def _tensor_value(row: CompareRow | None, pair, name: str) -> float | str:
    if pair.bench is None:
        return N_A
    if row is None:  # a non-tensor line: nothing to compute
        return UNSUPPORTED
    if name in row.metrics:
        return float(row.metrics[name])
    return text_cell(name, row.fail_reason)


def _identity(pair) -> tuple[str, str, str, str, str, str]:
    """Both sides' names, dtypes and shapes as msprobe's columns spell them (N/A for no bench)."""
    npu, bench = pair.npu, pair.bench
    return (
        pair.npu_name,
        pair.bench_name or N_A,
        npu.dtype or N_A,
        bench.dtype if bench is not None and bench.dtype else N_A,
        _shape_cell(npu.shape),
        _shape_cell(bench.shape) if bench is not None else N_A,
    )


def _shape_cell(shape) -> str:
    return shape if isinstance(shape, str) else shape_text(shape)  # a value's is msprobe's text


def _facts(pair) -> tuple[tuple[str, ...], tuple, tuple | None]:
    """What a pair's line and its Result judge's row both show, worked out once: the
    identity (:func:`_identity`) and each side's summary cells (None: no bench)."""
    bench = pair.bench
    return _identity(pair), _summary(pair.npu).cells(), _summary(bench).cells() if bench is not None else None


def _api_row(pair, facts: tuple, cells: dict[str, str]) -> ApiRow:
    npu, bench = pair.npu, pair.bench
    identity, summary, bench_summary = facts
    bench_summary = bench_summary if bench_summary is not None else (N_A,) * 4
    return ApiRow(
        *identity,
        npu.requires_grad,
        bench.requires_grad if bench is not None else None,
        summary[0],
        summary[1],
        bench_summary[0],
        bench_summary[1],
        cells.get("NormRelativeErr", N_A),
        cells.get("Cosine", N_A),
        cells.get("One Thousandth Err Ratio", N_A),
        npu.md5 or N_A,
        bench.md5 if bench is not None and bench.md5 else N_A,
    )


def _lines(mode: str, rows: Sequence[tuple[CompareRow | None, object]]) -> list[list]:
    """The lines of one call (its tensors' rows and pairs, and ``(None, ValuePair)`` for its
    other arguments), Result and Err_message judged over all of them; the statistics cells
    are left as values (:class:`~.msprobe_table.TableText` writes them)."""
    cells = [dict(zip(MODE_COLUMNS[mode], _metric_values(mode, row, pair))) for row, pair in rows]
    facts = [_facts(pair) for _, pair in rows]
    verdicts = judge_api([_api_row(pair, f, c) for (_, pair), f, c in zip(rows, facts, cells)], mode)
    lines = []
    for (_, pair), (identity, summary, bench_summary), metric_cells, verdict in zip(rows, facts, cells, verdicts):
        npu, bench = pair.npu, pair.bench
        # msprobe compares the two columns after its merge: no bench reads as no requires_grad
        consistent = str(npu.requires_grad == (bench.requires_grad if bench is not None else None))
        stats = [] if mode == "md5" else [*summary, *(bench_summary if bench_summary is not None else [N_A] * 4)]
        lines.append(
            [
                *identity,
                _grad_cell(npu.requires_grad),
                _grad_cell(bench.requires_grad) if bench is not None else N_A,
                *(cell_text(v) for v in metric_cells.values()),
                *stats,
                consistent,
                verdict.result,
                verdict.err_message,  # msprobe's judge replaces the comparison's messages
            ]
        )
    return lines


def dump_mode(sides) -> str:
    """``tensor``, ``statistics`` or ``md5``: what the NPU dump holds."""
    if sides.npu.has_md5:
        return "md5"
    return "tensor" if (sides.npu.header.task or "tensor") == "tensor" else "statistics"


class MsprobeLines:
    """msprobe's compare-result lines of one rank pair (``sides``: its
    :class:`~.msprobe_plan.MsprobeSides`), built as its rows arrive (:meth:`add`). msprobe
    judges a call over all its lines, tensors and other arguments (:mod:`.msprobe_values`), so
    a call's lines are made once its last tensor's row has come, while the run still compares;
    only calls whose rows did not all come wait for :meth:`text`. Calls are in dump.json's
    order (a call with no tensor included), lines within a call in msprobe's order."""

    def __init__(self, sides) -> None:
        from .msprobe_plan import tensor_names

        self._pairs, self._mode = tensor_names(sides), dump_mode(sides)
        by_call: dict[int, list] = {}
        for pair in sides.pairing.pairs:
            by_call.setdefault(id(pair.npu_call), []).append(pair)
        # in dump.json's order, as msprobe lists them; a call with no tensor has no pair, so
        # its bench call is the one of the same key
        bench_calls = {call.key.text: call for call in sides.bench.calls}
        calls = [c for c in sides.npu.calls if id(c) in by_call or not c.tensors]
        listed_calls = {id(c) for c in calls}
        calls += [pairs[0].npu_call for key, pairs in by_call.items() if key not in listed_calls]
        self._entries = {id(c): _call_entries(c, by_call.get(id(c), []), bench_calls) for c in calls}
        self._tensors = {call: sum(not isinstance(e, ValuePair) for e in es) for call, es in self._entries.items()}
        self._rows: dict[int, dict[int, CompareRow]] = {}
        self._lines: dict[int, list[list]] = {}
        self._stacks = _stacks(sides.npu_rank)
        self._keys = {id(c): c.key.text for c in calls}
        head = header(self._mode, self._stacks is not None)
        start = len(BASIC) + len(MODE_COLUMNS[self._mode])
        statistics = range(start, start + len(SUMMARY)) if self._mode != "md5" else range(0)
        self._table = TableText(head, statistics, _TEXT)

    def add(self, row: CompareRow) -> None:
        pair = self._pairs.get(row.tensor_index or "")
        if pair is None:
            return
        call = id(pair.npu_call)
        rows = self._rows.setdefault(call, {})
        rows[id(pair)] = row
        if len(rows) == self._tensors[call]:  # the call's lines, and their text, while the run goes on
            self._lines[call] = self._call_lines(call)
            self._table.add(call, self._lines[call])

    def _call_lines(self, call: int) -> list[list]:
        rows = self._rows.get(call, {})
        entries = [
            (rows.get(id(entry)), entry)
            for entry in self._entries[call]
            if isinstance(entry, ValuePair) or id(entry) in rows
        ]
        lines = _lines(self._mode, entries)
        if self._stacks is not None:  # the call's stack on its first line, as msprobe shows it
            frames = self._stacks.get(self._keys[call])
            for i, line in enumerate(lines):
                line.append(str(list(frames)) if i == 0 and frames is not None else N_A)
        if self._mode == "tensor":
            for line, (_, entry) in zip(lines, entries):
                line.append(_data_names(entry))
        return lines

    def text(self) -> str:
        """The CSV of every row added (a call none of whose rows came is left out)."""
        calls = (
            (call, self._lines.get(call) or self._call_lines(call))
            for call in self._entries
            if call in self._rows or not self._tensors[call]
        )
        return self._table.text(calls)


def _stacks(rank) -> dict[str, tuple[str, ...]] | None:
    """The NPU rank's stacks by call key; None without a ``stack.json`` (msprobe's compare then
    has no stack column), empty when it cannot be read (the shell's ``ni`` says why)."""
    if not rank.stack_json.is_file():
        return None
    try:
        return read_stack(rank.stack_json).frames
    except PrecisionToolError:
        return {}


def _data_names(entry) -> str:
    """msprobe's Data_name cell: both sides' tensor files (``-1`` for none, ``N/A`` for no bench)."""
    if isinstance(entry, ValuePair):
        return str([NO_FILE, NO_FILE if entry.bench is not None else N_A])
    bench = entry.bench
    return str([entry.npu.data_name or NO_FILE, (bench.data_name or NO_FILE) if bench is not None else N_A])


def _call_entries(call, pairs: list, bench_calls: dict) -> list:
    """A call's lines in msprobe's order: its tensors' pairs and :class:`ValuePair` lines for
    its other arguments (against the bench call its tensors were paired with; for a call with
    no tensor paired, the bench's call of the same key)."""
    bench_call = next((p.bench_call for p in pairs if p.bench_call is not None), None)
    if bench_call is None and not pairs:
        bench_call = bench_calls.get(call.key.text)
    by_tensor = {id(p.npu): p for p in pairs}
    entries = []
    for leaf in msprobe_order(call.leaves):
        if isinstance(leaf, Tensor):
            if id(leaf) in by_tensor:
                entries.append(by_tensor.pop(id(leaf)))
        elif listed(leaf):
            entries.append(value_pair(call, leaf, bench_call))
    return entries + list(by_tensor.values())  # a pair whose tensor is no leaf of the call


def msprobe_lines(plans: Sequence) -> list[MsprobeLines | None]:
    """A collector for each msprobe plan of ``plans`` (None for the others)."""
    return [MsprobeLines(plan.msprobe) if getattr(plan, "msprobe", None) is not None else None for plan in plans]


def write_msprobe_files(
    root: OutputRoot, directory: Path, plans: Sequence, collected: Sequence[MsprobeLines | None]
) -> list[Path]:
    """For each msprobe plan (its rows' lines in ``collected``, from :func:`msprobe_lines`): the
    mapping file and msprobe's columns, in ``directory/msprobe/``; returns the files written."""
    written = []
    for plan, lines in zip(plans, collected):
        if lines is None:
            continue
        where = directory / MSPROBE_DIR
        written.append(
            root.write_text(where / f"mapping_{plan.tag}.yaml", mapping_text(plan.msprobe.pairing.mapping()))
        )
        written.append(root.write_text(where / f"compare_result_{plan.tag}.csv", lines.text()))
    return written
