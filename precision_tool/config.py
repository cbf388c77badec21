"""Settings: defaults < config.py < environment < command-line flags, in one frozen object.

A ``config.py`` is read as data, never executed: only top-level ``NAME = <literal>``
assignments count (``ast.literal_eval``), so a config file cannot run code.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import PrecisionToolError

CONFIG_ENV = "PRECISION_TOOL_CONFIG"
ENV_PREFIX = "PRECISION_TOOL_"

DEFAULT_DANGEROUS_CASTS = tuple(
    [(src, dst) for src in ("DT_FLOAT", "DT_FLOAT16", "DT_BF16", "DT_DOUBLE")
     for dst in ("DT_INT8", "DT_UINT8", "DT_INT16", "DT_UINT16", "DT_INT32", "DT_UINT32",
                 "DT_INT64", "DT_UINT64")]
    + [("DT_INT64", "DT_INT32"), ("DT_INT64", "DT_INT16"), ("DT_INT64", "DT_INT8"),
       ("DT_INT32", "DT_INT16"), ("DT_INT32", "DT_INT8"), ("DT_INT16", "DT_INT8"),
       ("DT_UINT64", "DT_UINT32"), ("DT_UINT32", "DT_UINT16"), ("DT_UINT16", "DT_UINT8")])


@dataclass(frozen=True)
class Config:
    """Every setting of the tool. File keys are the upper-case names (``DATA_ROOT_DIR``...)."""

    data_root_dir: Path = Path("precision_data")
    tf_dump_step: str = "0"
    cosine_threshold: float = 0.98
    red_threshold: float | None = None  # None: the RED that goes with the cosine threshold
    vcs_limit: int = 3
    workers: int = 0  # 0: one per CPU core
    dangerous_casts: tuple[tuple[str, str], ...] = DEFAULT_DANGEROUS_CASTS
    cmd_root_path: str = ""  # accepted for compatibility with the original; unused
    debug: bool = False
    source: Path | None = field(default=None, compare=False)  # the config.py that was read

    @property
    def worker_count(self) -> int:
        return self.workers if self.workers > 0 else (os.cpu_count() or 1)

    @property
    def temp_dir(self) -> Path:
        return self.data_root_dir / "temp"


_FIELDS = {f.name.upper(): f for f in fields(Config) if f.name != "source"}
_OPTIONAL_NUMBERS = frozenset({"RED_THRESHOLD"})


def _coerce(name: str, value: Any, origin: str) -> Any:
    """``value`` as the type of setting ``name``; PrecisionToolError naming ``origin`` if it won't go."""
    default = getattr(Config, _FIELDS[name].name)
    try:
        if name in _OPTIONAL_NUMBERS:
            return None if value is None or str(value).strip().lower() in ("", "none") else float(value)
        if isinstance(default, Path):
            return Path(str(value))
        if isinstance(default, bool):
            return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
        if isinstance(default, (int, float)) and not isinstance(value, (int, float)):
            return type(default)(str(value).strip())
        if isinstance(default, tuple):
            return tuple(tuple(pair) for pair in value)
        if isinstance(default, str):
            return "" if value is None else str(value)
        return type(default)(value)
    except (TypeError, ValueError):
        raise PrecisionToolError(f"setting {name}: cannot use {value!r}", origin) from None


def read_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """The settings a config.py assigns, as ``{NAME: value}``; unknown names are ignored."""
    path = Path(path)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise PrecisionToolError(f"cannot read config ({exc})", path) from None
    except SyntaxError as exc:
        raise PrecisionToolError(f"config syntax error at line {exc.lineno}: {exc.msg}", path) from None
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in _FIELDS:
                try:
                    values[name] = ast.literal_eval(node.value)
                except ValueError:
                    raise PrecisionToolError(
                        f"config line {node.lineno}: {name} must be a literal value", path) from None
    return values


def find_config_file(flag: str | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    """``--config``, else ``$PRECISION_TOOL_CONFIG``, else ``./config.py`` when present."""
    chosen = flag or environ.get(CONFIG_ENV)
    if chosen:
        if not Path(chosen).is_file():
            raise PrecisionToolError("config file not found", chosen)
        return Path(chosen)
    local = cwd / "config.py"
    return local if local.is_file() else None


def load_config(flags: Mapping[str, Any] | None = None, config_path: str | None = None,
                environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Config:
    """Merge defaults, the config file, ``PRECISION_TOOL_<NAME>`` variables and ``flags``.

    ``flags`` maps upper-case setting names to values given on the command line (None: not given).
    """
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    path = find_config_file(config_path, environ, cwd)
    merged: dict[str, Any] = {}
    if path is not None:
        merged.update({k: (k, v, str(path)) for k, v in read_config_file(path).items()})
        data = merged.get("DATA_ROOT_DIR")
        if data and not Path(str(data[1])).is_absolute():  # relative to the config file's dir
            merged["DATA_ROOT_DIR"] = ("DATA_ROOT_DIR", path.parent / str(data[1]), str(path))
    for name in _FIELDS:
        if ENV_PREFIX + name in environ:
            merged[name] = (name, environ[ENV_PREFIX + name], ENV_PREFIX + name)
    for name, value in (flags or {}).items():
        if value is not None:
            merged[name] = (name, value, "command line")
    settings = {_FIELDS[n].name: _coerce(n, v, origin) for n, v, origin in merged.values()}
    config = replace(Config(), **settings, source=path)
    if config.cosine_threshold != config.cosine_threshold or config.vcs_limit < 0:
        raise PrecisionToolError("COSINE_THRESHOLD must be a number and VCS_LIMIT >= 0")
    if config.red_threshold is not None and not config.red_threshold >= 0:
        raise PrecisionToolError("RED_THRESHOLD must be a number >= 0, or None")
    return config
