"""The training dump directory tree: run / device / model / model id / step directories.

Pure readers: nothing in a dump directory is ever written, renamed or deleted (FORMATS.md
section 2). The files of one step directory are listed by :mod:`.dump_names`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from precision_tool.errors import PrecisionToolError

from .dump_names import (
    MAPPING_FILE,
    DumpListing,
    all_digits,
    check_dir,
    is_file_entry,
    list_dump_files,
    normalise_op_name,
    parse_dump_name,
    scan_dir,
)

__all__ = [
    "DumpTree",
    "StepDir",
    "list_dump_files",
    "normalise_op_name",
    "parse_dump_name",
    "parse_device_spec",
    "parse_step_spec",
]

_RUN_NAME = re.compile(r"^[0-9]{14}$")  # YYYYmmddHHMMSS
_LAYOUT_DEPTH = 5  # run / device / model_name / model_id / step
_MAX_STEPS = 1_000_000  # a step range wider than this is surely a typo


def parse_step_spec(spec: str | int | Iterable[int] | None) -> frozenset[int] | None:
    """Parse a ``TF_DUMP_STEP`` value: ``'0'``, ``'0|5|10'``, ranges ``'3-5'``; None = all.

    None and blank strings mean every step. Ranges are inclusive (as the TF adapter's
    ``dump_step`` accepts them).
    """
    if spec is None:
        return None
    if isinstance(spec, bool) or not isinstance(spec, (str, int, list, tuple, set, frozenset)):
        raise PrecisionToolError(f"bad TF_DUMP_STEP {spec!r}: expected steps like '0|5|10'")
    if not isinstance(spec, str):  # a step number, or a collection of them
        spec = "|".join(map(str, spec)) if not isinstance(spec, int) else str(spec)
    if not spec.strip():
        return None
    steps: set[int] = set()
    for token in spec.split("|"):
        steps.update(_parse_step_token(token.strip(), spec))
    return frozenset(steps)


def parse_device_spec(spec: str | int | Iterable[int] | None) -> frozenset[int] | None:
    """Parse a device selection: ``'0'``, ``'0,3-5'`` (``|`` separates too); None or blank = all."""
    if spec is None:
        return None
    if isinstance(spec, bool) or not isinstance(spec, (str, int, list, tuple, set, frozenset)):
        raise PrecisionToolError(f"bad device selection {spec!r}: expected devices like '0,3-5'")
    if not isinstance(spec, str):
        spec = ",".join(map(str, spec)) if not isinstance(spec, int) else str(spec)
    if not spec.strip():
        return None
    devices: set[int] = set()
    for token in spec.replace("|", ",").split(","):
        devices.update(_parse_step_token(token.strip(), spec, what="device selection", example="'0,3-5'"))
    return frozenset(devices)


def _parse_step_token(token: str, spec: str, what: str = "TF_DUMP_STEP", example: str = "'0|5|10' or '3-5'") -> range:
    bad = PrecisionToolError(f"bad {what} {spec!r}: expected values like {example}")
    low, sep, high = token.partition("-")
    low, high = low.strip(), high.strip()
    if not all_digits(low) or (sep and not all_digits(high)):
        raise bad
    first, last = int(low), int(high) if sep else int(low)
    if last < first or last - first >= _MAX_STEPS:
        raise bad
    return range(first, last + 1)


@dataclass(frozen=True)
class StepDir:
    """One step directory of the training layout; a label is None when the layout lacks it."""

    run: str | None
    device: int | None
    model_name: str | None
    model_id: int | None
    step: int | None
    path: Path


_INT_LABELS = (False, True, False, True, True)  # which of the five labels are numbers


def _label(value: str, numeric: bool) -> str | int | None:
    return value if not numeric else int(value) if all_digits(value) else None


def _run_sort_key(run: str | None) -> tuple[int, str]:
    # Timestamp-named runs first, in time order (fixed width, so text order is time order);
    # other names after them, by name; unknown last.
    if run is None:
        return (2, "")
    return (0 if _RUN_NAME.match(run) else 1, run)


def _step_sort_key(s: StepDir) -> tuple:
    nums = [(v is None, v or 0) for v in (s.device, s.model_id, s.step)]
    return (_run_sort_key(s.run), nums[0], s.model_name or "", *nums[1:], str(s.path))


class DumpTree:
    """The NPU dump tree ``{root}/{run}/{device}/{model_name}/{model_id}/{step}/files``.

    Tolerant of partial trees: any directory up to five levels below ``dump_root`` that holds
    dump files directly (or sits at the fifth level) is a step directory. Its labels are its path
    components right-aligned on ``run/device/model_name/model_id/step``, so a root that is a step
    (or model, or device) directory of a real tree keeps its labels, taken from the root's
    ancestors when those fit (numeric device, model id and step); labels that do not fit are None.
    Run names that are not ``YYYYmmddHHMMSS`` timestamps sort after those that are, and are only
    the default run when no timestamped run exists.
    """

    def __init__(self, dump_root: str | os.PathLike):
        self.root = Path(dump_root)
        check_dir(self.root)
        self.skipped: list[tuple[Path, str]] = []
        self._steps = sorted(self._walk(self.root, 0, []), key=_step_sort_key)
        self.skipped.sort(key=lambda item: str(item[0]))

    def _walk(self, directory: Path, depth: int, rel: list[str]) -> list[StepDir]:
        try:
            entries = scan_dir(directory)
        except PrecisionToolError as exc:
            if depth == 0:  # nothing at all can be found: say so rather than return nothing
                raise
            self.skipped.append((directory, exc.problem))
            return []
        found: list[StepDir] = []
        if depth == _LAYOUT_DEPTH or any(_looks_like_dump(e) for e in entries):
            found.append(self._step_dir(directory, rel))
        if depth < _LAYOUT_DEPTH:
            for entry in entries:  # any order: the step list is sorted once at the end
                if is_file_entry(entry, want_dir=True):
                    found += self._walk(directory / entry.name, depth + 1, rel + [entry.name])
        return found

    def _step_dir(self, path: Path, rel: list[str]) -> StepDir:
        missing = _LAYOUT_DEPTH - len(rel)
        outer = [None] * missing
        if missing:
            root = self.root.resolve()
            names = [p.name for p in [root, *root.parents]][:missing][::-1]
            fitted = [_label(n, num) for n, num in zip(names, _INT_LABELS)]
            if len(names) == missing and all(names) and None not in fitted:
                outer = fitted
        inner = [_label(n, num) for n, num in zip(rel, _INT_LABELS[missing:])]
        return StepDir(*outer, *inner, path=path)

    def step_dirs(self) -> list[StepDir]:
        """Every step directory found, sorted by run (oldest first), device, model, id, step."""
        return list(self._steps)

    def runs(self) -> list[str | None]:
        """The run (time) directories, oldest first; see the class note on odd names."""
        return sorted({s.run for s in self._steps}, key=_run_sort_key)

    def newest_run(self) -> str | None:
        """The default run: the newest timestamped one, else the last by name."""
        runs = self.runs()
        stamped = [r for r in runs if r is not None and _RUN_NAME.match(r)]
        return (stamped or runs or [None])[-1]

    def devices(self, run: str | None = None) -> list[int | None]:
        """Device ids present, ascending. In these listings a None filter means "any"."""
        return self._labels("device", run)

    def models(self, run: str | None = None, device: int | str | None = None) -> list[str | None]:
        """Model (GE sub-graph) names present, by name."""
        return self._labels("model_name", run, device)

    def model_ids(
        self, run: str | None = None, device: int | str | None = None, model: str | None = None
    ) -> list[int | None]:
        """Model ids present, ascending."""
        return self._labels("model_id", run, device, model)

    def steps(
        self, run: str | None = None, device: int | str | None = None, model: str | None = None
    ) -> list[int | None]:
        """Step numbers present, ascending."""
        return self._labels("step", run, device, model)

    def _labels(self, attr: str, *filters: object) -> list:
        values = {getattr(s, attr) for s in self._matching(*filters)}
        return sorted(values, key=lambda v: (v is None, v if v is not None else 0))

    def _matching(
        self, run: str | None = None, device: int | str | None = None, model: str | None = None
    ) -> list[StepDir]:
        device = _as_int(device)
        return [
            s
            for s in self._steps
            if (run is None or s.run == run)
            and (device is None or s.device == device)
            and (model is None or s.model_name == model)
        ]

    def select(
        self,
        run: str | None = None,
        steps: str | int | Iterable[int] | None = None,
        device: int | str | None = None,
        model: str | None = None,
        devices: str | Iterable[int] | None = None,
    ) -> list[StepDir]:
        """The step directories to compare.

        Defaults to the newest run, every device and model, and every step. ``steps`` is a
        ``TF_DUMP_STEP`` value (see :func:`parse_step_spec`), ``devices`` a device selection
        (:func:`parse_device_spec`); a step directory whose step or device is unknown (a flat
        tree) passes those filters. Returns an empty list when nothing matches.
        """
        wanted_steps, wanted_devices = parse_step_spec(steps), parse_device_spec(devices)
        chosen = self._matching(run if run is not None else self.newest_run(), device, model)
        return [
            s
            for s in chosen
            if (wanted_steps is None or s.step is None or s.step in wanted_steps)
            and (wanted_devices is None or s.device is None or s.device in wanted_devices)
        ]

    def listing(self, step_dir: StepDir) -> DumpListing:
        """The dump files of one step directory."""
        return list_dump_files(step_dir.path)

    def listings(self, step_dirs: Iterable[StepDir]) -> dict[StepDir, DumpListing]:
        """Listings keyed by step directory, so equal file names of two devices never collide."""
        return {s: list_dump_files(s.path) for s in step_dirs}


def _as_int(value: int | str | None) -> int | None:
    if value is None or isinstance(value, int):
        return value
    if all_digits(value.strip()):
        return int(value)
    raise PrecisionToolError(f"expected a number, got {value!r}")


def _looks_like_dump(entry: os.DirEntry) -> bool:
    if entry.name == MAPPING_FILE or all_digits(entry.name):
        return is_file_entry(entry)
    return parse_dump_name(entry.name) is not None and is_file_entry(entry)
