"""Completion logic without a terminal: what :func:`suggest` offers where."""

from __future__ import annotations

import pytest

from precision_tool.commands.registry import Command, Registry
from precision_tool.shell.suggest import (
    MAX_SUGGESTIONS,
    CommandSpec,
    CompletionState,
    list_paths,
    spec_of,
    state_from_registry,
    suggest,
)

OPS = ["input", "model/conv1/Conv2D", "model/conv1/Relu", "model/dense/MatMul", "trans_Cast_0", "has space/op"]
TENSORS = ["Conv2D.model_conv1_Conv2D.12.0.17", "model_conv1_Relu.0.1764.npy"]
PATHS = ["a.npy", "b.npy", "dumps/", "my dir/"]


def fake_paths(word: str) -> list[str]:
    return [p for p in PATHS if p.startswith(word)]


def _ni(parser):
    parser.add_argument("-n", "--name", dest="name_flag")
    parser.add_argument("name", nargs="?")
    parser.add_argument("-g", "--graph")
    parser.add_argument("-a", "--all", action="store_true")
    parser.add_argument("-s", "--subgraph", type=int)


def _cp(parser):
    parser.add_argument("left")
    parser.add_argument("right")
    parser.add_argument("-o", "--out")


def make_state(op_names=OPS) -> CompletionState:
    registry = Registry()
    registry.add(Command("ni", "node info", _ni, lambda a, c: None, completions={"": "op", "-n": "op"}))
    registry.add(Command("cp", "compare two tensors", _cp, lambda a, c: None, completions={"": "tensor", "-o": "path"}))
    registry.add(
        Command(
            "help",
            "help",
            lambda p: p.add_argument("command", nargs="?"),
            lambda a, c: None,
            aliases=("?",),
            completions={"": "command"},
        )
    )
    return state_from_registry(registry, op_names=op_names, tensor_names=TENSORS, paths=fake_paths)


def texts(line: str, state: CompletionState | None = None) -> list[str]:
    return [s.text for s in suggest(line, state or make_state())]


def test_an_empty_line_offers_every_command_and_the_shell_words():
    assert texts("") == ["ni", "cp", "help", "?", "exit", "quit"]
    assert texts("   ") == texts("")


def test_a_partial_command_offers_the_matching_ones():
    found = suggest("h", make_state())
    assert [s.text for s in found] == ["help"]
    assert found[0].start_position == -1 and found[0].kind == "command" and found[0].meta == "help"
    assert texts("q") == ["quit"]
    assert texts("zz") == []


def test_an_alias_says_what_it_stands_for():
    (alias,) = suggest("?", make_state())
    assert alias.meta == "alias of help"


def test_a_word_starting_with_a_dash_offers_the_commands_flags():
    assert texts("ni -") == ["-h", "--help", "-n", "--name", "-g", "--graph", "-a", "--all", "-s", "--subgraph"]
    found = suggest("ni --sub", make_state())
    assert [(s.text, s.start_position, s.kind) for s in found] == [("--subgraph", -5, "flag")]


def test_after_the_command_the_positional_kind_completes():
    assert texts("ni model/conv1/") == ["model/conv1/Conv2D", "model/conv1/Relu"]
    assert texts("ni ")[:3] == ["input", "model/conv1/Conv2D", "model/conv1/Relu"]


def test_op_names_match_loosely_after_the_exact_prefixes():
    # exact prefix, then "/"-"_" and case equivalent prefix, then anywhere in the name
    state = make_state(["model_conv1_x", "model/conv1/Conv2D", "other/MODEL/conv1"])
    assert texts("ni model_conv1", state) == ["model_conv1_x", "model/conv1/Conv2D", "other/MODEL/conv1"]
    assert texts("ni relu") == ["model/conv1/Relu"]


def test_after_a_flag_that_takes_a_value_its_kind_completes():
    assert texts("ni -n model/d") == ["model/dense/MatMul"]
    assert texts("ni --name model/d") == ["model/dense/MatMul"]  # declared for -n, applies to --name
    assert texts("ni -g ") == []  # -g declares nothing
    assert texts("cp a.npy b.npy -o d") == ["dumps/"]


def test_after_a_flag_without_value_the_positional_kind_completes():
    assert texts("ni -a model/dense") == ["model/dense/MatMul"]
    assert texts("ni -s 2 inp") == ["input"]


def test_the_value_part_of_flag_equals_value_completes():
    found = suggest("ni --name=model/de", make_state())
    assert [(s.text, s.start_position) for s in found] == [("--name=model/dense/MatMul", -len("--name=model/de"))]


def test_tensors_complete_to_tensor_names_and_paths():
    assert texts("cp ") == TENSORS + ["a.npy", "b.npy", "dumps/", "'my dir/'"]
    assert texts("cp a.npy Conv2D.") == ["Conv2D.model_conv1_Conv2D.12.0.17"]
    assert texts("cp a.npy conv1") == TENSORS  # loosely: case and "." vs "_" aside
    found = suggest("cp du", make_state())
    assert [(s.text, s.kind, s.display, s.meta) for s in found] == [("dumps/", "path", "dumps/", "dir")]


def test_help_completes_command_names():
    assert texts("help ") == ["ni", "cp", "help", "?", "exit", "quit"]
    assert texts("help c") == ["cp"]
    assert texts("? n") == ["ni"]


def test_an_unknown_command_offers_nothing():
    assert texts("bogus ") == []
    assert texts("bogus -") == []


def test_only_the_command_after_the_last_semicolon_counts():
    assert texts("cp a b; n") == ["ni"]
    assert texts("cp a b;ni model/dense") == ["model/dense/MatMul"]
    assert texts("ni x ;  ") == texts("")
    assert texts("ni 'a;b' model/d") == ["model/dense/MatMul"]  # a quoted ; separates nothing


def test_a_quoted_word_keeps_its_quote():
    found = suggest("ni 'model/d", make_state())
    assert [(s.text, s.start_position) for s in found] == [("'model/dense/MatMul'", -len("'model/d"))]
    assert texts('ni "model/d') == ['"model/dense/MatMul"']
    assert texts("ni 'has") == ["'has space/op'"]


def test_a_name_that_needs_quotes_gets_them():
    assert texts("ni has") == ["'has space/op'"]
    assert texts("cp my") == ["'my dir/'"]


def test_an_open_quote_stays_open_after_a_directory():
    assert texts("cp 'my") == ["'my dir/"]
    assert texts('cp "my dir/') == ['"my dir/']


def test_finished_quoted_words_count_as_words():
    assert texts("ni 'a b' -") == texts("ni -")
    assert texts("'ni' model/d") == ["model/dense/MatMul"]
    assert texts("n\\i model/d") == ["model/dense/MatMul"]


def test_names_are_loaded_only_when_that_kind_is_wanted():
    calls = []

    def ops():
        calls.append(1)
        return OPS

    state = make_state(op_names=ops)
    texts("", state), texts("ni -", state), texts("cp ", state), texts("help ", state)
    assert calls == []
    texts("ni mo", state)
    assert calls == [1]


def test_at_most_max_suggestions():
    many = [f"op_{i}" for i in range(MAX_SUGGESTIONS + 50)]
    assert len(texts("ni op", make_state(many))) == MAX_SUGGESTIONS


def test_spec_of_reads_the_parser():
    registry = Registry()
    command = registry.add(Command("ni", "node info", _ni, lambda a, c: None, completions={"-n": "op"}))
    spec = spec_of(command)
    assert isinstance(spec, CommandSpec) and spec.summary == "node info"
    assert {"-n", "--name", "-g", "--graph", "-s", "--subgraph"} == set(spec.value_options)
    assert spec.completions["--name"] == "op" and "-a" not in spec.value_options


def test_list_paths_lists_a_directory(tmp_path, monkeypatch):
    (tmp_path / "dumps").mkdir()
    (tmp_path / "dumps" / "x.npy").write_bytes(b"")
    (tmp_path / "data.npy").write_bytes(b"")
    (tmp_path / ".hidden").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert list_paths("") == ["data.npy", "dumps/"]
    assert list_paths("d") == ["data.npy", "dumps/"]
    assert list_paths("dumps/") == ["dumps/x.npy"]
    assert list_paths(".h") == [".hidden"]
    assert list_paths(f"{tmp_path}/du") == [f"{tmp_path}/dumps/"]
    assert list_paths("nowhere/x") == []


@pytest.mark.parametrize("line", ["'", '"', "\\", "ni '", "ni \\", ";;;", "cp 'a' \"b", "ni --=", "ni -n="])
def test_odd_input_never_raises(line):
    assert isinstance(suggest(line, make_state()), list)


def test_ls_t_completes_op_types_from_the_registry_s_ls():
    from precision_tool.commands import build_registry
    from precision_tool.shell.suggest import state_from_registry, suggest

    state = state_from_registry(
        build_registry(), op_names=["net/conv"], op_types=lambda: ["Conv2D", "MatMulV2", "Relu"]
    )
    found = suggest("ls -t Co", state)
    assert [s.text for s in found] == ["Conv2D"] and found[0].meta == "op type"
    assert [s.text for s in suggest("ls --type=Re", state)] == ["--type=Relu"]
    assert [s.text for s in suggest("ls -n net", state)] == ["net/conv"]  # -n still op names
