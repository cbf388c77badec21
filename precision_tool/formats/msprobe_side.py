"""``stack.json`` and ``construct.json``, the side files of an msprobe rank directory.

``stack.json`` says where in the user's code each call was made; msprobe has written it two
ways, and both are read into ``{KEY: (frame, ...)}``:

- older: ``{KEY: [frame, ...]}``, one member per call;
- current (the calls that share a stack share one member, numbered from ``"0"``):
  ``{"0": [[KEY, ...], [frame, ...]], "1": ...}``.

A frame is ``"File {path}, line {n}, in {function}, \\n {source line}"``; a stack msprobe could
not take is ``["The call stack retrieval failed."]``. msprobe writes stacks for forward calls
only.

``construct.json`` maps each module or API call to the module call it ran in:
``{NODE: PARENT}``, PARENT ``null`` or ``""`` for a call at the top (and for the
``optimizer``/``clip_grad`` nodes, which are parents themselves). With Megatron's pipeline each
value is ``[PARENT, MICRO_STEP]`` and the member ``megatron_micro_step_number`` says how many
micro steps there were. Level ``L1`` leaves the file empty (``{}``).

Both files are read as far as they go when a crash cut them (:mod:`.msprobe_json`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import PrecisionToolError
from .files import read_regular
from .msprobe_json import (
    MAX_CONSTRUCT_JSON_BYTES,
    MAX_STACK_JSON_BYTES,
    Members,
    counted,
    decode_text,
    parse_members,
)

MICRO_STEP_COUNT = "megatron_micro_step_number"


@dataclass(frozen=True)
class Stacks:
    """The frames of each call key, and one line per problem (a cut, members of neither form)."""

    frames: dict[str, tuple[str, ...]]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Construct:
    """The parent of each node (None at the top), the micro step of each (Megatron only) and
    how many micro steps there were (None without Megatron), and one line per problem."""

    parents: dict[str, str | None]
    micro_steps: dict[str, int] = field(default_factory=dict)
    micro_step_count: int | None = None
    problems: tuple[str, ...] = ()


def _members(path: str | os.PathLike, kind: str, limit: int) -> Members:
    text = decode_text(read_regular(path, kind, limit), kind, path)
    try:
        return parse_members(text)
    except ValueError as exc:
        raise PrecisionToolError(f"not an msprobe {kind}: {exc}", path) from None


def _stop_line(members: Members, label: str, count: str) -> list[str]:
    if members.cut:
        return [f"{label}: cut short after {count} (the run probably crashed)"]
    if members.damage:
        return [f"{label}: damaged: {members.damage}; read {count} before it"]
    return []


def read_stack(path: str | os.PathLike) -> Stacks:
    """Read the ``stack.json`` at ``path``, either form (see the module's docstring).

    Raises:
        PrecisionToolError: one line naming ``path``: unreadable, larger than 1 GiB, no JSON
            object.
    """
    members = _members(path, "stack.json", MAX_STACK_JSON_BYTES)
    return stacks_of(members.items, os.fspath(path), members)


def stacks_of(items: dict[str, Any], label: str = "stack.json", members: Members | None = None) -> Stacks:
    """The stacks of the parsed members ``items`` of a ``stack.json`` (``label`` names it)."""
    frames: dict[str, tuple[str, ...]] = {}
    odd: list[str] = []
    for key, value in items.items():
        if _is_grouped(value):
            frames.update((name, tuple(value[1])) for name in value[0])
        elif _is_frames(value):
            frames[key] = tuple(value)
        else:
            odd.append(key)
    problems = [] if members is None else _stop_line(members, label, counted(len(items), "entry", "entries"))
    if odd:
        problems.append(f"{label}: no stack, skipped: {counted(len(odd), 'entry', 'entries')} (the first: {odd[0]!r})")
    return Stacks(frames, tuple(problems))


def _is_frames(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(frame, str) for frame in value)


def _is_grouped(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], list)
        and all(isinstance(name, str) for name in value[0])
        and _is_frames(value[1])
    )


def read_construct(path: str | os.PathLike) -> Construct:
    """Read the ``construct.json`` at ``path`` (see the module's docstring).

    Raises:
        PrecisionToolError: one line naming ``path``: unreadable, larger than 256 MiB, no JSON
            object.
    """
    members = _members(path, "construct.json", MAX_CONSTRUCT_JSON_BYTES)
    return construct_of(members.items, os.fspath(path), members)


def construct_of(items: dict[str, Any], label: str = "construct.json", members: Members | None = None) -> Construct:
    """The tree of the parsed members ``items`` of a ``construct.json``."""
    parents: dict[str, str | None] = {}
    micro_steps: dict[str, int] = {}
    count = items.get(MICRO_STEP_COUNT)
    odd: list[str] = []
    for node, value in items.items():
        if node == MICRO_STEP_COUNT:
            continue
        if isinstance(value, list) and len(value) == 2 and _is_int(value[1]):
            micro_steps[node] = value[1]
            value = value[0]
        if value is None or isinstance(value, str):
            parents[node] = value or None
        else:
            odd.append(node)
    problems = [] if members is None else _stop_line(members, label, counted(len(items), "node", "nodes"))
    if odd:
        problems.append(
            f"{label}: a parent that is no name, skipped: {counted(len(odd), 'node', 'nodes')} (the first: {odd[0]!r})"
        )
    return Construct(parents, micro_steps, count if _is_int(count) else None, tuple(problems))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
