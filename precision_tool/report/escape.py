"""Names from the data made safe for HTML, SVG and the JSON a page's script reads.

Op names, file names and graph names are hostile input: they may hold ``<script>``, quotes,
``</script>``, control characters or Unicode bidi controls (U+202E turns the rest of a line
around on screen, so ``evil\u202eFDP.exe`` would read as ``evil.exe PDF``). Three steps, used
everywhere the report shows a name:

- :func:`visible` (the terminal's rule too, from :mod:`precision_tool.render.lines`):
  characters that do not show as themselves (C0/C1 controls, Unicode format characters such as
  the bidi controls and zero-width marks, line/paragraph separators, lone surrogates) become
  their Python escape (``\\u202e``), so what is on screen is what is there;
- :func:`esc`: :func:`visible`, then HTML/XML escaping of ``& < > " '`` (text and attributes);
- :func:`json_for_script`: JSON that cannot end the ``<script>`` element holding it (``<``,
  ``>`` and ``&`` as ``\\u003c``...), ASCII only, NaN as ``null``.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

from ..render.lines import visible  # the one rule, shared with the terminal

__all__ = ["esc", "json_for_script", "number", "sort_key", "visible"]


def esc(text: object) -> str:
    """``str(text)`` safe as HTML/SVG text or a quoted attribute value (see the module doc)."""
    return html.escape(visible(str(text)), quote=True)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {visible(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def json_for_script(value: Any) -> str:
    """``value`` as JSON safe inside ``<script type="application/json">``: strings made
    :func:`visible`, NaN and infinities as ``null``, ``< > &`` escaped so no ``</script>`` or
    ``<!--`` can appear."""
    text = json.dumps(_clean(value), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def number(value: float, fmt: str = "%.6f") -> str:
    """A metric as the CSV writes it (``%.6f``); ``NaN``, ``inf``, ``-inf`` as words."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return fmt % value


def sort_key(value: float) -> str:
    """A ``data-sort`` attribute for a number: its repr, ``""`` for NaN (sorted last)."""
    return "" if math.isnan(value) else repr(value)
