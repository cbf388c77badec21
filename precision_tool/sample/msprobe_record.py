"""Record a forward pass the way msprobe's hooks see it, as :class:`~..formats.msprobe_write.Call`s.

What the hooks do (msprobe ``pytorch/dump/module_dump/module_processor.py``,
``core/dump/hook_manager.py``, ``mindspore/dump/cell_processor.py``):

* an API call is ``{prefix}.{name}.{n}.forward``, ``n`` counting the calls of that prefix and
  name in the step from 0 (``Functional.linear.5.forward`` is the sixth ``F.linear``); calls
  made inside a hooked API are not recorded;
* a module is ``Module.{path}.{Class}.forward.{n}`` (``Cell.`` on MindSpore), ``path`` its name
  in ``named_modules()``, ``n`` counting the calls of that module; the root model is not
  hooked, so top-level modules have no parent;
* an entry is made when the call starts; a module's is moved to the end when it returns, so in
  dump.json a module follows everything it called;
* the parent of a call is the innermost module running when it starts.

Stacks are built here from call sites: each call's own frame, then for every enclosing module
(innermost first) the framework's module-call frames and the line that called the module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..formats.msprobe_write import Call


@dataclass
class Recorder:
    """Collects the calls of one step on one rank.

    ``module_prefix`` is ``Module`` (PyTorch) or ``Cell`` (MindSpore); ``machinery`` the frames
    the framework adds when a module is called (``_call_impl``, ``_wrapped_call_impl``);
    ``root`` the frames outside the model (the training script), outermost last.
    """

    module_prefix: str = "Module"
    machinery: Sequence[str] = ()
    root: Sequence[str] = ()
    calls: list[Call] = field(default_factory=list)
    _open: list[tuple[Call, str]] = field(default_factory=list)  # (module call, its call site)
    _api_counts: Counter = field(default_factory=Counter)
    _module_counts: Counter = field(default_factory=Counter)
    _tick: int = 0

    def _now(self) -> int:
        self._tick += 1
        return self._tick

    def _chain(self) -> list[str]:
        """The frames of the open modules, innermost first, then the root's."""
        frames: list[str] = []
        for _call, site in reversed(self._open):
            frames += [*self.machinery, site]
        return frames + list(self.root)

    def _parent(self) -> str | None:
        return self._open[-1][0].key if self._open else None

    def api(
        self, prefix: str, name: str, args: Sequence[Any], output: Any, kwargs: dict | None = None, site: str = ""
    ) -> str:
        """Record one API call (its own frame is ``site``); returns its key."""
        base = f"{prefix}.{name}"
        key = f"{base}.{self._api_counts[base]}.forward"
        self._api_counts[base] += 1
        begin = self._now()
        self.calls.append(
            Call(
                key,
                tuple(args),
                dict(kwargs or {}),
                output,
                parent=self._parent(),
                stack=[site, *self._chain()],
                begin=begin,
                end=self._now(),
            )
        )
        return key

    @contextmanager
    def module(
        self,
        path: str,
        cls: str,
        args: Sequence[Any],
        kwargs: dict | None = None,
        parameters: dict | None = None,
        site: str = "",
    ) -> Iterator[Call]:
        """Record a module call around the ``with`` body; set the yielded call's ``outputs``."""
        base = f"{self.module_prefix}.{path}.{cls}"
        key = f"{base}.forward.{self._module_counts[base]}"
        self._module_counts[base] += 1
        call = Call(
            key,
            tuple(args),
            dict(kwargs or {}),
            parameters=dict(parameters or {}),
            parent=self._parent(),
            stack=[*self.machinery, site, *self._chain()],
            begin=self._now(),
        )
        self._open.append((call, site))
        try:
            yield call
        finally:
            self._open.pop()
        call.end = self._now()
        self.calls.append(call)
