"""Settings: defaults < config.py < environment < command-line flags, in one frozen object.

A ``config.py`` is read as data, never executed: only top-level ``NAME = <literal>``
assignments count (``ast.literal_eval``), so a config file cannot run code.
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import PrecisionToolError
from .formats.files import read_regular
from .formats.tree import parse_step_spec

CONFIG_ENV = "PRECISION_TOOL_CONFIG"
ENV_PREFIX = "PRECISION_TOOL_"

DEFAULT_DANGEROUS_CASTS = tuple(
    [
        (src, dst)
        for src in ("DT_FLOAT", "DT_FLOAT16", "DT_BF16", "DT_DOUBLE")
        for dst in ("DT_INT8", "DT_UINT8", "DT_INT16", "DT_UINT16", "DT_INT32", "DT_UINT32", "DT_INT64", "DT_UINT64")
    ]
    + [
        ("DT_INT64", "DT_INT32"),
        ("DT_INT64", "DT_INT16"),
        ("DT_INT64", "DT_INT8"),
        ("DT_INT32", "DT_INT16"),
        ("DT_INT32", "DT_INT8"),
        ("DT_INT16", "DT_INT8"),
        ("DT_UINT64", "DT_UINT32"),
        ("DT_UINT32", "DT_UINT16"),
        ("DT_UINT16", "DT_UINT8"),
    ]
)


@dataclass(frozen=True)
class Config:
    """Every setting of the tool. File keys are the upper-case names (``DATA_ROOT_DIR``...)."""

    data_root_dir: Path = Path("precision_data")
    output_root: Path | None = None  # None: temp/ under the data root
    tf_dump_step: str = "0"
    cosine_threshold: float = 0.98
    red_threshold: float | None = None  # None: the RED that goes with the cosine threshold
    vcs_limit: int = 3
    workers: int = 0  # 0: one per CPU core
    scheduler: str = ""  # a Dask scheduler address, or local:N; "" runs on local processes
    split_bytes: int = 0  # pairs larger than this are compared in ranges; 0: derived
    cluster_timeout: float = 300.0  # seconds without any result before a cluster run stops
    dangerous_casts: tuple[tuple[str, str], ...] = DEFAULT_DANGEROUS_CASTS
    cmd_root_path: str = ""  # accepted for compatibility with the original; unused
    debug: bool = False
    source: Path | None = field(default=None, compare=False)  # the config.py that was read

    @property
    def worker_count(self) -> int:
        return self.workers if self.workers > 0 else (os.cpu_count() or 1)

    @property
    def temp_dir(self) -> Path:
        """The output root: OUTPUT_ROOT (``--out``), else ``temp/`` under the data root. The
        only place the tool writes (see :mod:`precision_tool.formats.output_root`)."""
        return self.output_root if self.output_root is not None else self.data_root_dir / "temp"


_FIELDS = {f.name.upper(): f for f in fields(Config) if f.name != "source"}
_RELATIVE_TO_FILE = ("DATA_ROOT_DIR", "OUTPUT_ROOT")  # paths in config.py: from the file's dir
MAX_CONFIG_BYTES = 1 << 20  # a config.py is a few KB; more is not a settings file
MAX_WORKERS = 1024
MAX_SPLIT_BYTES = 1 << 50
MAX_SECONDS = 7 * 24 * 3600
_SCHEDULER = re.compile(r"^(tcp|tls|ucx|ws|wss|inproc)://[^\s/]+$")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")
_DTYPE_NAME = re.compile(r"^DT_[A-Z0-9_]+$")


class _Bad(ValueError):
    """A value that is not what a setting wants; ``wants`` says what it wants."""

    def __init__(self, wants: str):
        super().__init__(wants)
        self.wants = wants


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _Bad("a number")
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (ValueError, OverflowError):
        raise _Bad("a number") from None
    if not math.isfinite(number):
        raise _Bad("a finite number")
    return number


def _whole(value: Any, low: int, high: int | None = None) -> int:
    wants = f"a whole number >= {low}" + (f" and <= {high}" if high is not None else "")
    if (
        isinstance(value, str)
        and value.strip().lstrip("+").isascii()
        and value.strip().lstrip("+").isdigit()
        and len(value) < 20
    ):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(wants)
    if value < low or (high is not None and value > high):
        raise _Bad(wants)
    return value


def _path(value: Any) -> Path:
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise _Bad("a directory path (a non-empty string)")
    return Path(value)


def _optional_path(value: Any) -> Path | None:
    return None if value is None or (isinstance(value, str) and not value.strip()) else _path(value)


def _steps(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Bad("steps as text like '0', '0|5|10' or '3-5' ('' for all)")
    try:
        parse_step_spec(value)
    except PrecisionToolError:
        raise _Bad("steps like '0', '0|5|10' or '3-5' ('' for all)") from None
    return str(value)


def _cosine(value: Any) -> float:
    number = _number(value)
    if not -1 <= number <= 1:
        raise _Bad("a cosine between -1 and 1")
    return number


def _distance(value: Any) -> float:
    number = _number(value)  # finite: an infinite RED would flag nothing, silently
    if number < 0:
        raise _Bad("a number >= 0")
    return number


def _red(value: Any) -> float | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    try:
        return _distance(value)
    except _Bad as bad:
        raise _Bad(bad.wants + (", or None" if bad.wants == "a number >= 0" else "")) from None


def _casts(value: Any) -> tuple[tuple[str, str], ...]:
    wants = "a list of (source, target) pairs of GE dtype names like ('DT_FLOAT', 'DT_INT32')"
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
        raise _Bad(wants)
    pairs = []
    for pair in value:
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or not all(isinstance(n, str) and _DTYPE_NAME.match(n) for n in pair)
        ):
            raise _Bad(wants)
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise _Bad("True or False")


def _seconds(value: Any) -> float:
    number = _number(value)
    if not 1 <= number <= MAX_SECONDS:
        raise _Bad(f"a number of seconds from 1 to {MAX_SECONDS}")
    return number


def _scheduler(value: Any) -> str:
    """A Dask scheduler: ``tcp://HOST:PORT`` (tls, ucx, ws, wss, inproc too), ``local:N``, or ''."""
    wants = f"a Dask scheduler address like 'tcp://HOST:8786', or 'local:N' (N 1 to {MAX_WORKERS}), or ''"
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Bad(wants)
    text = value.strip()
    if text.startswith("local:"):
        count = text[len("local:") :]
        if not (count.isascii() and count.isdigit() and 1 <= int(count) <= MAX_WORKERS):
            raise _Bad(wants)
        return f"local:{int(count)}"
    if text and not _SCHEDULER.match(text):
        raise _Bad(wants)
    return text


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, (str, Path)):
        raise _Bad("a string")
    return str(value)


_RULES = {
    "DATA_ROOT_DIR": _path,
    "OUTPUT_ROOT": _optional_path,
    "TF_DUMP_STEP": _steps,
    "COSINE_THRESHOLD": _cosine,
    "RED_THRESHOLD": _red,
    "VCS_LIMIT": lambda v: _whole(v, 0),
    "WORKERS": lambda v: _whole(v, 0, MAX_WORKERS),
    "DANGEROUS_CASTS": _casts,
    "SCHEDULER": _scheduler,
    "SPLIT_BYTES": lambda v: _whole(v, 0, MAX_SPLIT_BYTES),
    "CLUSTER_TIMEOUT": _seconds,
    "CMD_ROOT_PATH": _text,
    "DEBUG": _flag,
}
# A flag's value, when the setting's rule also takes None (a flag cannot say None: leaving it
# out is what gives the configured value).
_GIVEN = {"RED_THRESHOLD": _distance}


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_setting(name: str, value: Any, origin: str) -> Any:
    """``value`` checked and converted for setting ``name``; PrecisionToolError naming the
    setting, what it wants and ``origin`` when it is not that."""
    try:
        return _RULES[name](value)
    except _Bad as bad:
        raise PrecisionToolError(f"setting {name}: {_shown(value)} is not {bad.wants}", origin) from None


def check_flag(name: str, text: str) -> Any:
    """``text`` of a command's flag that stands for setting ``name`` for one run (``vcs -c``
    is COSINE_THRESHOLD, ``vcs --red`` RED_THRESHOLD, ``-l`` VCS_LIMIT), checked by the same
    rule as config.py and the environment, so a value one accepts the others accept too.

    Raises ValueError whose text says what the setting wants. A flag cannot say None: leaving
    it out is what gives the configured value.
    """
    return _GIVEN.get(name, _RULES[name])(text)


def read_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """The settings a config.py assigns, as ``{NAME: value}``; unknown names are ignored."""
    path = Path(path)
    try:
        text = read_regular(path, "config file", MAX_CONFIG_BYTES).decode("utf-8")
        tree = ast.parse(text, filename=str(path))
    except UnicodeDecodeError as exc:
        raise PrecisionToolError(f"cannot read config ({exc})", path) from None
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        raise PrecisionToolError(f"config syntax error{where}: {exc.msg}", path) from None
    except (MemoryError, RecursionError, ValueError):  # absurd nesting; a NUL byte (older Pythons)
        raise PrecisionToolError(
            "config cannot be read as Python assignments (nested too deeply, or a NUL byte)", path
        ) from None
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in _FIELDS:
                values[name] = _literal(node, name, path)
    return values


def _literal(node: ast.Assign, name: str, path: Path) -> Any:
    try:
        return ast.literal_eval(node.value)
    except (ValueError, SyntaxError):  # a call, a name
        raise PrecisionToolError(f"config line {node.lineno}: {name} must be a literal value", path) from None
    except TypeError as exc:  # {[1]: 2}
        raise PrecisionToolError(f"config line {node.lineno}: {name} is not a valid literal ({exc})", path) from None
    except (MemoryError, RecursionError):
        raise PrecisionToolError(f"config line {node.lineno}: {name} is nested too deeply", path) from None


def find_config_file(flag: str | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    """``--config``, else ``$PRECISION_TOOL_CONFIG``, else ``./config.py`` when present."""
    chosen = flag or environ.get(CONFIG_ENV)
    if chosen:
        if not Path(chosen).exists():  # a FIFO or a directory: read_config_file says what it is
            raise PrecisionToolError("config file not found", chosen)
        return Path(chosen)
    local = cwd / "config.py"
    return local if local.is_file() else None


def load_config(
    flags: Mapping[str, Any] | None = None,
    config_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Config:
    """Merge defaults, the config file, ``PRECISION_TOOL_<NAME>`` variables and ``flags``.

    ``flags`` maps upper-case setting names to values given on the command line (None: not given).
    """
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    path = find_config_file(config_path, environ, cwd)
    given: list[tuple[str, Any, str]] = []  # (name, value, origin), later ones win
    if path is not None:
        given += [(name, value, str(path)) for name, value in read_config_file(path).items()]
    given += [(name, environ[ENV_PREFIX + name], ENV_PREFIX + name) for name in _FIELDS if ENV_PREFIX + name in environ]
    given += [(name, value, "command line") for name, value in (flags or {}).items() if value is not None]
    settings = {}
    for name, value, origin in given:  # every value is checked, even one a later source overrides
        value = check_setting(name, value, origin)
        if name in _RELATIVE_TO_FILE and path is not None and origin == str(path) and value is not None:
            value = path.parent / value  # relative paths in config.py: from the file's directory
        settings[_FIELDS[name].name] = value
    return replace(Config(), **settings, source=path)
