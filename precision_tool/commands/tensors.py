"""Tensor-name resolution as ``cp`` and the shell's completer import it.

The resolution lives in :mod:`precision_tool.compare.tensor_names`, below the commands, so that
explain/, report/ and the checks can resolve names too; this module only hands its names on
(the shell does not import the comparison layer).
"""

from __future__ import annotations

from ..compare.tensor_names import ResolvedTensor, decoded_files, resolve_tensor

__all__ = ["ResolvedTensor", "decoded_files", "resolve_tensor"]
