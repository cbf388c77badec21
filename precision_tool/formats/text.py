"""Two spellings every layer needs: a shape as text, and a name made safe as a file name."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_FILE_NAME = 255  # bytes in one file name on the usual file systems
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9_.+\-]")


def shape_text(shape: Iterable[int] | None, unknown: str = "?") -> str:
    """``[2,8,8,3]``; ``[]`` for a scalar; ``unknown`` when the shape is None."""
    return unknown if shape is None else "[" + ",".join(map(str, map(int, shape))) + "]"


def safe_file_name(stem: str, suffix: str = "", limit: int = MAX_FILE_NAME) -> str:
    """``stem + suffix`` made safe as one file name.

    Only ``A-Za-z0-9_.+-`` are kept (anything else, path separators and control characters
    included, becomes ``_``), runs of dots become ``_`` (no ``..``), there is no leading dot, and
    the result has at most ``limit`` characters: a long stem is cut and given a short hash of the
    whole stem, so two long names that differ only at the end stay different.
    """
    clean = re.sub(r"\.{2,}", "_", _UNSAFE_CHARS.sub("_", stem)).lstrip(".") or "_"
    suffix = re.sub(r"\.{2,}", "_", _UNSAFE_CHARS.sub("_", suffix))
    room = limit - len(suffix)
    if len(clean) > room:
        digest = hashlib.sha1(stem.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        clean = clean[: max(room - len(digest) - 1, 1)] + "-" + digest
    return clean + suffix
