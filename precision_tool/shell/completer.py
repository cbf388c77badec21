"""The prompt_toolkit ``Completer`` of the shell: an adapter of :func:`suggest.suggest`.

Op and tensor names come from the context, loaded the first time they are wanted and kept for the
session (not re-read per keystroke). Completion never raises: a failure to load names or a bug in
the suggestion logic gives no candidates, not a traceback in the middle of the prompt.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from ..commands.registry import Registry
from ..commands.tensors import decoded_files
from ..context import Context
from ..formats.dump_names import normalise_op_name
from .suggest import list_paths, state_from_registry, suggest

log = logging.getLogger("precision_tool")


def graph_and_dump_op_names(context: Context) -> list[str]:
    """Op names of every loaded Build graph, in graph order, then the op names of dump files
    that match no graph op (a dump without its graph still completes)."""
    names: list[str] = []
    for debug in context.debug_names():
        try:
            names += [ref.op.name for ref in context.ops(debug)]
        except Exception as exc:  # a broken graph: the other debug dirs still complete
            log.debug("no op names of %s for completion: %s", debug, exc)
    names = list(dict.fromkeys(names))
    known = {normalise_op_name(n) for n in names}
    for listing in _listings(context):
        for ref in listing.files:
            if normalise_op_name(ref.name.op_name) not in known:
                known.add(normalise_op_name(ref.name.op_name))
                names.append(ref.name.op_name)
    return names


def graph_op_types(context: Context) -> list[str]:
    """The op types of every loaded Build graph, sorted (``ls -t`` completes them)."""
    types: set[str] = set()
    for debug in context.debug_names():
        try:
            types.update(ref.op.type for ref in context.ops(debug))
        except Exception as exc:  # a broken graph: the other debug dirs still complete
            log.debug("no op types of %s for completion: %s", debug, exc)
    return sorted(types)


def msprobe_tensor_names(context: Context) -> list[str]:
    """msprobe's full tensor names (``KEY.input.0``) of the NPU side of an msprobe data root."""
    try:
        if not context.is_msprobe:
            return []
        return [
            desc.name
            for model in context.msprobe_models()
            for op in model.graphs[0].ops
            for desc in (*op.input_descs, *op.output_descs)
        ]
    except Exception as exc:  # an unreadable dump.json: nothing to offer
        log.debug("no msprobe tensor names for completion: %s", exc)
        return []


def tensor_file_names(context: Context) -> list[str]:
    """NPU dump file names of the selected steps, then golden ``.npy`` file names (msprobe's
    tensor names on an msprobe data root)."""
    names = msprobe_tensor_names(context)
    names += [ref.name.file_name for listing in _listings(context) for ref in listing.files]
    try:
        names += [entry.file_name for entry in context.golden().entries()]
    except Exception as exc:  # no golden dir, unreadable: nothing to offer
        log.debug("no golden names for completion: %s", exc)
    return names


def decoded_names(context: Context) -> list[str]:
    """The ``.npy`` files ``dc`` wrote under ``temp/decode/`` (``pt`` takes their bare names);
    read afresh each time, since ``dc`` adds to them during the session."""
    try:
        return [path.name for path in decoded_files(context)]
    except OSError as exc:
        log.debug("no decoded names for completion: %s", exc)
        return []


def _listings(context: Context) -> list:
    listings = []
    for debug in context.debug_names():
        try:
            listings += list(context.step_listings(debug).values())
        except Exception as exc:  # no dumps in this debug dir, or unreadable
            log.debug("no dump names of %s for completion: %s", debug, exc)
    return listings


class ShellCompleter(Completer):
    """Completes command names, flags, op names, tensors and paths for the shell."""

    def __init__(self, registry: Registry, context: Context, paths: Callable[[str], list[str]] = list_paths) -> None:
        self._context = context
        self._lock = threading.Lock()
        self._loaded: dict[str, tuple[str, ...]] = {}
        self.state = state_from_registry(
            registry,
            op_names=lambda: self._once("op", graph_and_dump_op_names),
            tensor_names=lambda: (*self._once("tensor", tensor_file_names), *decoded_names(context)),
            paths=paths,
            op_types=lambda: self._once("optype", graph_op_types),
        )

    def _once(self, key: str, load: Callable[[Context], list[str]]) -> tuple[str, ...]:
        with self._lock:  # completion runs in a thread; load each list only once
            if key not in self._loaded:
                try:
                    self._loaded[key] = tuple(load(self._context))
                except Exception as exc:  # a missing or broken data root: complete nothing
                    log.debug("cannot load %s names for completion: %s", key, exc)
                    self._loaded[key] = ()
            return self._loaded[key]

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        """The :func:`suggest` candidates for the text before the cursor, as Completions."""
        try:
            suggestions = suggest(document.text_before_cursor, self.state)
        except Exception:  # a bug here must not break the prompt
            log.debug("completion failed", exc_info=True)
            return
        for s in suggestions:
            yield Completion(s.text, s.start_position, display=s.display, display_meta=s.meta or None)
