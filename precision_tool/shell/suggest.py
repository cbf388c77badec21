"""What can come next at the cursor: pure completion logic, tested without a terminal.

:func:`suggest` reads the text before the cursor the way the shell will split it (quotes, ``;``
between commands), finds the word being typed and what belongs there (a command name, one of the
command's flags, or the kind the command declares for that place: an op name, a path, a tensor,
a command name), and returns candidates. The prompt_toolkit ``Completer`` in ``completer.py``
only adapts the result.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

MAX_SUGGESTIONS = 1000
_NEEDS_QUOTES = frozenset(" \t\n'\";\\")
_NORMALISE = str.maketrans({"/": "_", ".": "_", "\\": "_", " ": "_", "-": "_"})

Names = Sequence[str] | Callable[[], Sequence[str]]


@dataclass(frozen=True)
class Suggestion:
    """One candidate: ``text`` replaces the ``-start_position`` characters before the cursor."""

    text: str
    start_position: int
    kind: str  # "command", "flag", "op", "optype", "path", "tensor"
    meta: str = ""
    display: str | None = None


@dataclass(frozen=True)
class CommandSpec:
    """What completion needs to know about one command.

    ``options`` maps every option string to its help; ``value_options`` are those that take a
    value; ``completions`` maps option strings (every spelling of an option) or ``""``
    (positionals) to the kind that completes there.
    """

    name: str
    summary: str = ""
    options: dict[str, str] = field(default_factory=dict)
    value_options: frozenset[str] = frozenset()
    completions: dict[str, str] = field(default_factory=dict)


def spec_of(command) -> CommandSpec:
    """The :class:`CommandSpec` of a registry ``Command`` (read from its argument parser)."""
    options: dict[str, str] = {}
    value_options: set[str] = set()
    completions = dict(command.completions)
    for action in command.parser()._actions:
        strings = action.option_strings
        kind = next((command.completions[s] for s in strings if s in command.completions), None)
        for string in strings:
            options[string] = action.help or ""
            if action.nargs != 0:
                value_options.add(string)
            if kind is not None:
                completions[string] = kind  # "-n" declared: "--name" completes the same way
    return CommandSpec(command.name, command.summary, options, frozenset(value_options), completions)


def list_paths(word: str) -> list[str]:
    """Paths that complete ``word``: entries of its directory whose names start with its last
    part, directories ending in ``/``. Hidden entries only when the part starts with ``.``."""
    head = word[: word.rfind("/") + 1]
    base = word[len(head) :]
    directory = os.path.expanduser(head) if head else "."
    found = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.startswith(base) and (base.startswith(".") or not entry.name.startswith(".")):
                    found.append(head + entry.name + ("/" if _is_dir(entry) else ""))
                    if len(found) >= MAX_SUGGESTIONS:
                        break
    except OSError:
        return []
    return sorted(found)


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


@dataclass
class CompletionState:
    """Everything :func:`suggest` draws on. Name lists may be callables, called only when
    that kind is wanted (so op names load on the first op completion, not at start-up)."""

    commands: dict[str, CommandSpec]  # by name and alias
    op_names: Names = ()
    tensor_names: Names = ()
    list_paths: Callable[[str], list[str]] = list_paths
    shell_words: dict[str, str] = field(default_factory=dict)  # exit words and their help
    op_types: Names = ()

    def names(self, kind: str) -> Sequence[str]:
        source = {"op": self.op_names, "optype": self.op_types}.get(kind, self.tensor_names)
        return source() if callable(source) else source


def state_from_registry(
    registry,
    op_names: Names = (),
    tensor_names: Names = (),
    paths: Callable[[str], list[str]] = list_paths,
    op_types: Names = (),
) -> CompletionState:
    """A :class:`CompletionState` for every command (and alias) of ``registry``."""
    commands = {}
    for command in registry:
        spec = spec_of(command)
        for name in (command.name, *command.aliases):
            commands[name] = spec
    return CompletionState(commands, op_names, tensor_names, paths, dict(registry.exit_words), op_types)


@dataclass(frozen=True)
class _Cursor:
    """The last command's finished words, and the word being typed (unquoted)."""

    words: list[str]
    current: str
    start: int  # index in the text where the current word begins
    end: int  # the cursor: the text's length
    quote: str  # the quote the current word left open, or ""


def _scan(text: str) -> _Cursor:
    """Split ``text`` as ``split_commands`` would, keeping only the command after the last ``;``;
    tolerant of an unclosed quote (the user is still typing)."""
    words: list[str] = []
    chars: list[str] | None = None  # the open word, if any
    start, quote, escaped = len(text), "", False
    for i, ch in enumerate(text):
        if escaped:
            chars.append(ch)
            escaped = False
        elif quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                escaped = True
            else:
                chars.append(ch)
        elif ch.isspace() or ch == ";":
            if chars is not None:
                words.append("".join(chars))
                chars = None
            if ch == ";":
                words = []
        else:
            if chars is None:
                chars, start = [], i
            if ch in "'\"":
                quote = ch
            elif ch == "\\":
                escaped = True
            else:
                chars.append(ch)
    if chars is None:
        return _Cursor(words, "", len(text), len(text), "")
    return _Cursor(words, "".join(chars), start, len(text), quote)


def _quoted(value: str, quote: str) -> str:
    """``value`` written so the shell reads it back; an open quote stays open after a directory."""
    if quote == "'" and "'" in value:
        quote = ""  # cannot be written inside single quotes
    if not quote:
        return shlex.quote(value) if _NEEDS_QUOTES.intersection(value) else value
    body = value.replace("\\", "\\\\").replace('"', '\\"') if quote == '"' else value
    return quote + body + ("" if value.endswith("/") else quote)


def _normalised(name: str) -> str:
    return name.translate(_NORMALISE).lower()


def _matching(candidates: Iterable[str], prefix: str, loose: bool = False) -> list[str]:
    """Candidates starting with ``prefix``; with ``loose``, then those equal up to case and
    ``/ . -`` vs ``_`` at the start, then those containing it anywhere."""
    candidates = list(dict.fromkeys(candidates))
    exact = [c for c in candidates if c.startswith(prefix)]
    if not loose or not prefix:
        return exact
    key, seen = _normalised(prefix), set(exact)
    rest = [c for c in candidates if c not in seen]
    starts = [c for c in rest if _normalised(c).startswith(key)]
    seen.update(starts)
    inside = [c for c in rest if c not in seen and key in _normalised(c)]
    return exact + starts + inside


def _command_names(state: CompletionState, prefix: str, cursor: _Cursor, kind: str) -> list[Suggestion]:
    metas = {
        name: spec.summary if spec.name == name else f"alias of {spec.name}" for name, spec in state.commands.items()
    }
    metas.update((w, m) for w, m in state.shell_words.items() if w not in metas)
    return [_make(name, cursor, kind, metas[name]) for name in _matching(metas, prefix)]


def _make(
    value: str, cursor: _Cursor, kind: str, meta: str = "", lead: str = "", display: str | None = None
) -> Suggestion:
    """A suggestion replacing the whole word being typed (opening quote included)."""
    return Suggestion(lead + _quoted(value, cursor.quote), cursor.start - cursor.end, kind, meta, display)


def _path_display(path: str) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name + "/" if path.endswith("/") else name


def _values(state: CompletionState, kind: str | None, prefix: str, cursor: _Cursor, lead: str = "") -> list[Suggestion]:
    """Candidates of ``kind`` for a word (after ``lead``, the ``--flag=`` part) starting with ``prefix``."""
    if kind == "command":
        return _command_names(state, prefix, cursor, "command")
    found: list[Suggestion] = []
    if kind in ("op", "tensor", "optype"):
        meta = "op type" if kind == "optype" else kind
        found = [_make(n, cursor, kind, meta, lead) for n in _matching(state.names(kind), prefix, loose=True)]
    if kind in ("path", "tensor"):
        found += [
            _make(p, cursor, "path", "dir" if p.endswith("/") else "file", lead, _path_display(p))
            for p in state.list_paths(prefix)
        ]
    return found


def suggest(text_before_cursor: str, state: CompletionState) -> list[Suggestion]:
    """Candidates for the word being typed at the end of ``text_before_cursor``.

    The first word of a command completes to command names; a word starting with ``-`` to the
    command's flags; any other word (or the value part of ``--flag=``) to what the command
    declares for it: after a flag that takes a value, that flag's kind, else the positionals'
    kind. Only the command after the last ``;`` counts. At most ``MAX_SUGGESTIONS``.
    """
    cursor = _scan(text_before_cursor)
    if not cursor.words:
        return _command_names(state, cursor.current, cursor, "command")[:MAX_SUGGESTIONS]
    spec = state.commands.get(cursor.words[0])
    if spec is None:
        return []
    current = cursor.current
    if current.startswith("-") and not cursor.quote:
        option, equals, value = current.partition("=")
        if equals and option in spec.value_options:
            found = _values(state, spec.completions.get(option), value, cursor, lead=option + "=")
        else:
            found = [_make(o, cursor, "flag", spec.options[o]) for o in _matching(spec.options, current)]
        return found[:MAX_SUGGESTIONS]
    previous = cursor.words[-1] if len(cursor.words) > 1 else ""
    kind = spec.completions.get(previous if previous in spec.value_options else "")
    return _values(state, kind, current, cursor)[:MAX_SUGGESTIONS]
