"""Nothing read from disk is executed or unpickled; config, mapping.csv and output names cannot
be used to reach outside the places the tool reads and writes."""

from __future__ import annotations

import ast
import csv
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.compare.result import CompareRow
from precision_tool.compare.result_csv import neutralise, restore, write_result_csv
from precision_tool.compare.result_read import read_result_csv
from precision_tool.config import load_config
from precision_tool.formats.dump_names import list_dump_files, read_mapping
from precision_tool.formats.dump_write import TensorSpec, build_dump
from precision_tool.formats.golden import read_golden, write_golden
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from tests.conftest import REPO_ROOT, make_context, run_command

PACKAGE = REPO_ROOT / "precision_tool"
TS = 1767225600000000


# --- nothing is executed or unpickled -----------------------------------------------------------


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def _name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return f"{_name(func.value)}.{func.attr}"
    return ""


def _keyword(call: ast.Call, name: str):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _problems(path: Path, root: Path = REPO_ROOT) -> list[str]:
    """What in one source file could execute or unpickle data, as ``file:what`` lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            found += [f"imports {n}" for n in names if n.split(".")[0] in ("pickle", "marshal", "shelve", "dill")]
    for call in _calls(tree):
        name = _name(call.func)
        if name in ("eval", "exec", "__import__", "os.system", "os.popen") or name.endswith("read_pickle"):
            found.append(f"calls {name}")
        if name.endswith(".load") and name.split(".")[0] in ("np", "numpy"):
            value = _keyword(call, "allow_pickle")
            if not (isinstance(value, ast.Constant) and value.value is False):
                found.append("np.load without allow_pickle=False")
        shell = _keyword(call, "shell")
        if shell is not None and not (isinstance(shell, ast.Constant) and shell.value is False):
            found.append(f"{name} with shell=")
    return [f"{path.relative_to(root)}:{what}" for what in found]


def test_the_package_never_unpickles_evaluates_or_runs_a_shell():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 30
    problems = [p for path in files for p in _problems(path)]
    assert problems == []


def test_the_checker_catches_what_it_is_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import pickle\nimport numpy as np\nnp.load('x')\nnp.load('y', allow_pickle=True)\n"
        "eval('1')\nimport subprocess\nsubprocess.run('ls', shell=True)\n"
    )
    assert len(_problems(bad, tmp_path)) == 5


def test_a_pickled_golden_file_is_refused_not_loaded(tmp_path):
    path = tmp_path / f"x.0.{TS}.npy"
    marker = tmp_path / "unpickled"
    with open(path, "wb") as handle:  # an object array whose unpickling would create `marker`
        np.save(handle, np.array([_Marker(str(marker))], dtype=object), allow_pickle=True)
    golden = read_golden(tmp_path)
    with pytest.raises(Exception, match="pickled Python objects"):
        golden.lookup("x", 0)
    assert not marker.exists()


class _Marker:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


# --- config.py only from the documented places ---------------------------------------------------


def test_config_is_read_only_from_the_flag_the_variable_or_the_working_directory(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    data = tmp_path / "elsewhere" / "precision_data"
    for place in (home, cwd, data):
        place.mkdir(parents=True)
    for place in (home, data, data.parent):  # none of these is a documented place
        (place / "config.py").write_text("VCS_LIMIT = 99\n")
    environ = {"HOME": str(home)}
    config = load_config({"DATA_ROOT_DIR": data}, environ=environ, cwd=cwd)
    assert config.vcs_limit == 3 and config.source is None
    (cwd / "config.py").write_text("VCS_LIMIT = 7\n")
    assert load_config({"DATA_ROOT_DIR": data}, environ=environ, cwd=cwd).vcs_limit == 7
    named = tmp_path / "named.py"
    named.write_text("VCS_LIMIT = 8\n")
    assert load_config({}, environ={**environ, "PRECISION_TOOL_CONFIG": str(named)}, cwd=cwd).vcs_limit == 8
    assert load_config({}, str(named), environ=environ, cwd=cwd).vcs_limit == 8


def test_a_config_file_with_code_is_not_run(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "config.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nVCS_LIMIT = 4\nWORKERS = __import__('os').system('touch {marker}')\n"
    )
    with pytest.raises(Exception, match="must be a literal"):
        load_config({}, environ={}, cwd=tmp_path)
    assert not marker.exists()


# --- mapping.csv cannot escape its directory -----------------------------------------------------

ESCAPES = [
    "../x",
    "..",
    "../../etc/passwd",
    "/etc/passwd",
    "a/../../b",
    "..\\..\\b",
    "c:\\x",
    "x\0y",
    f"Relu.{'..'}.1.0.{TS}",
]


def test_mapping_targets_that_leave_the_directory_are_refused(tmp_path):
    lines = [f"{100 + i},{target}" for i, target in enumerate(ESCAPES)]
    lines += ["../200,Relu.r.1.0.1767225600000000", "/abs,Relu.s.1.0.1767225600000000"]
    (tmp_path / "mapping.csv").write_text("\n".join(lines) + "\n")
    mapping = read_mapping(tmp_path)
    assert mapping.aliases == {} and len(mapping.problems) == len(lines)


def test_only_files_inside_the_directory_are_ever_listed(tmp_path):
    step, golden = tmp_path / "step", tmp_path / "golden"
    step.mkdir()
    outside = write_golden(tmp_path, "outside", 0, TS, np.ones(2, np.float32))
    (tmp_path / f"Relu.outside.1.0.{TS}").write_bytes(
        build_dump("o", [], [TensorSpec(np.ones(2, np.float32), "FLOAT")])
    )
    (step / "123").write_bytes(b"x")
    (step / "mapping.csv").write_text(f"123,../Relu.outside.1.0.{TS}\n")
    golden.mkdir()
    (golden / "456").write_bytes(outside.read_bytes())
    (golden / "mapping.csv").write_text(f"456,../{outside.name}\n")
    listing = list_dump_files(step)
    assert listing.files == []
    index = read_golden(golden)
    assert len(index) == 0
    assert all(path.parent in (step, golden) for path, _ in [*listing.skipped, *index.invalid])


# --- output names made from op names ---------------------------------------------------------------

HOSTILE_OP = "../../evil/" + "deep/" * 60 + "op"  # 300+ characters, separators and '..'


def _hostile_root(tmp_path: Path) -> Path:
    root = tmp_path / "precision_data"
    model = "ge_default_..m.." + "m" * 200
    step = root / "npu/debug_0/dump/20260101000000/0" / model / "1/0"
    step.mkdir(parents=True)
    desc = tensor_desc("DT_FLOAT", "ND", (2,), origin_format="ND", origin_shape=(2,))
    graph = build_model(
        [OpSpec("in", "Data", [], [desc], [desc]), OpSpec(HOSTILE_OP, "Relu", ["in:0"], [desc], [desc])], name=model
    )
    (root / "npu/debug_0/graph").mkdir(parents=True)
    write_graph_text(graph, root / "npu/debug_0/graph/ge_proto_00000001_Build.txt")
    spec = TensorSpec(np.ones(2, np.float32), "FLOAT")
    (step / "77").write_bytes(build_dump(HOSTILE_OP, [spec], [spec]))
    key = HOSTILE_OP.replace("/", "_").replace(".", "_")
    (step / "mapping.csv").write_text(f"77,Relu.{key}.1.0.{TS}\n")
    (step / f"Relu.a..b{'x' * 200}.2.0.{TS + 1}").write_bytes(build_dump("a..b", [spec], [spec]))
    write_golden(root / "tf/dump", "in", 0, TS, np.ones(2, np.float32))
    return root


def test_files_written_for_hostile_op_names_stay_under_temp_with_safe_names(tmp_path):
    root = _hostile_root(tmp_path)
    before = {p for p in tmp_path.rglob("*")}
    context, out = make_context(root, width=400, WORKERS=1)
    step = next(root.glob("npu/debug_0/dump/*/*/*/*/*"))
    odd = next(p for p in step.iterdir() if p.name.startswith("Relu.a..b"))
    for line in (
        "vc --step '0'",
        f"pt '{step / '77'}'",
        f"pt '{odd}'",
        f"dc '{step / '77'}'",
        f"dc '{odd}'",
        f"ni '{HOSTILE_OP}' -s 1",
        f"vc -o '{tmp_path / 'out_dir'}'",
    ):
        assert run_command(context, line) in (0, 1), (line, out.getvalue())
    created = {p for p in tmp_path.rglob("*")} - before
    files = [p for p in created if p.is_file()]
    assert len(files) >= 8, out.getvalue()
    for path in files:
        assert path.is_relative_to(root / "temp") or path.parent == tmp_path / "out_dir", path
        assert len(path.name.encode()) <= 255 and ".." not in path.name, path
        assert not path.name.startswith("."), path  # no temporary file left behind


# --- every write goes through the one door ------------------------------------------------------

# modules that write on purpose outside the output root: the writers of test inputs and of the
# sample data (they make data roots), and the shell history in the user's home
WRITES_ELSEWHERE = {
    "formats/dump_write.py",
    "formats/graph_write.py",
    "formats/onnx_write.py",
    "formats/torch_write.py",
    "formats/msprobe_write.py",
    "formats/golden.py",
    "shell/history.py",
    "formats/output_root.py",
    # the output root's held directory and pending file: its writes, made where it asks
    "formats/held_dir.py",
    # SQLite opens its own files; the row cache makes its directory through the
    # output root and refuses a link at the database's names first
    "compare/row_cache.py",
    # numba's compiled kernels: the tool's own state in the user's cache dir (as
    # the shell history), used only when private to the user
    "compare/numba_load.py",
}
WRITING_FUNCTIONS = {
    "os.replace",
    "os.rename",
    "os.renames",
    "os.unlink",
    "os.remove",
    "os.rmdir",
    "os.mkdir",
    "os.makedirs",
    "os.open",
    "os.symlink",
    "os.link",
    "os.truncate",
    "np.save",
    "np.savez",
    "np.savez_compressed",
    "np.savetxt",
    "numpy.save",
    "graphviz.render",
    "sqlite3.connect",
}
WRITING_METHODS = {
    "write_text",
    "write_bytes",
    "mkdir",
    "unlink",
    "rmdir",
    "touch",
    "symlink_to",
    "hardlink_to",
    "rename",
    "tofile",
}
WRITING_MODULES = {"shutil", "tempfile"}


def _writes(path: Path, root: Path = PACKAGE) -> list[str]:
    """Calls in one module that write files by themselves instead of through formats/output_root.py:
    ``open`` in a writing mode, os/numpy/shutil/tempfile writers, and the Path methods that
    write (``str.replace`` and ``Path.replace`` look alike: os.replace is caught, Path's not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    handles = _output_handles(tree)
    found = []
    for call in _calls(tree):
        name = _name(call.func)
        module, _, last = name.rpartition(".")
        if (
            _first_arg(call) in handles
            or module.split(".")[-1] == "root"
            or _opens_devnull(call)
            or _opens_to_read(call)
        ):
            continue  # into a file the output root opened; the OutputRoot (`root`, `self.root`)
        mode = (call.args[1] if len(call.args) > 1 else _keyword(call, "mode")) if name in ("open", "io.open") else None
        if (
            (mode is not None and not (isinstance(mode, ast.Constant) and mode.value in ("r", "rb")))
            or name in WRITING_FUNCTIONS
            or (module in WRITING_MODULES and last != "which")
            or (isinstance(call.func, ast.Attribute) and last in WRITING_METHODS)
        ):
            found.append(f"{path.relative_to(root)}:{call.lineno}: {name}")
    return found


def _output_handles(tree: ast.AST) -> set[str]:
    """Names bound by ``with <root>.create(...) as name``: files opened by the output root."""
    return {
        item.optional_vars.id
        for node in ast.walk(tree)
        if isinstance(node, ast.With)
        for item in node.items
        if isinstance(item.context_expr, ast.Call)
        and _name(item.context_expr.func).endswith(".create")
        and isinstance(item.optional_vars, ast.Name)
    }


READ_FLAGS = {"O_RDONLY", "O_NONBLOCK", "O_CLOEXEC", "O_NOFOLLOW", "O_BINARY", "O_NOCTTY", "O_DIRECTORY"}


def _flag_names(node: ast.AST) -> set[str] | None:
    """The ``os.O_*`` names a flags expression is made of (``os.O_X``, ``getattr(os, "O_X", 0)``,
    joined by ``|``); None when it is anything else (a number, a variable)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _flag_names(node.left), _flag_names(node.right)
        return None if left is None or right is None else left | right
    if isinstance(node, ast.Attribute) and _name(node).startswith("os.O_"):
        return {node.attr}
    if (
        isinstance(node, ast.Call)
        and _name(node.func) == "getattr"
        and len(node.args) >= 2
        and _name(node.args[0]) == "os"
        and isinstance(node.args[1], ast.Constant)
    ):
        return {node.args[1].value}
    return None


def _opens_to_read(call: ast.Call) -> bool:
    """``os.open`` whose flags, written out at the call, only read (O_RDONLY, nothing that
    writes or creates): a reader that needs O_NONBLOCK, which ``open`` cannot give."""
    names = _flag_names(call.args[1]) if _name(call.func) == "os.open" and len(call.args) > 1 else None
    return names is not None and "O_RDONLY" in names and names <= READ_FLAGS


def _opens_devnull(call: ast.Call) -> bool:
    return bool(call.args) and _name(call.args[0]) == "os.devnull"


def _first_arg(call: ast.Call) -> str | None:
    first = call.args[0] if call.args else None
    return first.id if isinstance(first, ast.Name) else None


def test_every_write_of_the_package_goes_through_the_output_root():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        if rel not in WRITES_ELSEWHERE and not rel.startswith("sample/"):
            wrong += _writes(path)
    assert wrong == []


def test_the_write_checker_catches_what_it_is_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import numpy as np, os, shutil\nfrom pathlib import Path\n"
        "Path('x').write_text('y')\nopen('f', 'w')\nnp.save('a', 1)\nos.replace('a', 'b')\n"
        "shutil.copy('a', 'b')\nPath('d').mkdir()\nopen('f', mode='ab')\n"
        "open('f')\n'a'.replace('b', 'c')\nshutil.which('dot')\n"
        "with root.create('x') as out:\n    np.save(out, 1)\nnp.save(other, 1)\n"
        "root.write_text('a', 'b')\nos.open(os.devnull, os.O_WRONLY)\nos.open('f', 1)\n"
        "os.open('f', os.O_RDONLY | os.O_CREAT)\nos.open('f', os.O_RDONLY | flags)\n"
        "os.open('f', os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))\n"
    )
    assert len(_writes(bad, tmp_path)) == 11, _writes(bad, tmp_path)


# --- no formula from a name in the result CSV --------------------------------------------------

FORMULA_STARTS = "=+-@\t\r"
FORMULA_OPS = [
    '=HYPERLINK("http://evil.example/x","click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "'=already quoted",
    "=1",
]
_NAME_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=30
)
_NAMES = _NAME_TEXT.filter(lambda s: s.rstrip() == s and (s.lstrip() == s or s[0] in "\t\r"))


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
@settings(max_examples=400, deadline=None)
def test_neutralise_is_undone_exactly_and_never_leaves_a_formula(text):
    cell = neutralise(text)
    assert restore(cell) == text
    assert cell[:1] not in FORMULA_STARTS or cell == ""
    formula = re.match(r"'*[=+\-@\t\r]", text)  # the rule as documented, whatever shortcut it takes
    assert cell == ("'" + text if formula else text)


@given(name=_NAMES, op_type=_NAMES, golden=_NAMES.filter(lambda s: s != "*"), reason=_NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_csv_round_trip_keeps_every_name_and_no_cell_is_a_formula(tmp_path, name, op_type, golden, reason):
    row = CompareRow(
        index=1,
        op_type=op_type,
        npu_name=name,
        npu_dtype="float16",
        npu_address=None,
        ground_truth=golden,
        golden_dtype="float32",
        tensor_index=f"{name}:output:0",
        shape=(2,),
        metrics={"CosineSimilarity": -0.5},
        fail_reason=reason,
    )
    path = write_result_csv(tmp_path / "r.csv", [row])
    (back,) = read_result_csv(path)
    assert (back.npu_name, back.op_type, back.ground_truth, back.fail_reason, back.tensor_index) == (
        name,
        op_type,
        golden,
        reason,
        f"{name}:output:0",
    )
    with open(path, newline="", encoding="utf-8") as handle:  # the cells, as a spreadsheet gets them
        cells = [cell for line in csv.reader(handle) for cell in line]
    for cell in cells:
        assert cell[:1] not in FORMULA_STARTS.replace("-", "") and (cell[:1] != "-" or float(cell) < 0), cell


def _formula_root(tmp_path: Path) -> Path:
    """input (Data) -> each FORMULA_OPS op (Relu) reading it, dumped and with golden tensors."""
    root = tmp_path / "precision_data"
    model = "ge_default_20260101000000_1"
    step = root / f"npu/debug_0/dump/20260101000000/0/{model}/1/0"
    step.mkdir(parents=True)
    desc = tensor_desc("DT_FLOAT", "ND", (3,), origin_format="ND", origin_shape=(3,))
    ops = [OpSpec("input", "Data", [], [desc], [desc])]
    ops += [
        OpSpec(
            name,
            "Relu",
            ["input:0"],
            [desc],
            [
                tensor_desc(
                    "DT_FLOAT",
                    "ND",
                    (3,),
                    origin_format="ND",
                    origin_shape=(3,),
                    origin_name=f"tf_relu_{k}",
                    origin_output_index=0,
                )
            ],
        )
        for k, name in enumerate(FORMULA_OPS)
    ]
    (root / "npu/debug_0/graph").mkdir(parents=True)
    write_graph_text(build_model(ops, name=model), root / "npu/debug_0/graph/ge_proto_00000001_Build.txt")
    value = np.array([1.0, -2.0, 3.0], np.float32)
    spec = TensorSpec(value, "FLOAT")
    write_golden(root / "tf/dump", "input", 0, TS, value)
    for k, name in enumerate(FORMULA_OPS):
        key = name.replace("/", "_").replace(".", "_").replace(" ", "_")
        (step / f"Relu.{key}.{k + 2}.0.{TS + k + 1}").write_bytes(
            build_dump(name, [spec], [TensorSpec(np.maximum(value, 0), "FLOAT")], dump_time=TS + k + 1)
        )
        write_golden(root / "tf/dump", f"tf_relu_{k}", 0, TS + k + 1, np.maximum(value, 0))
    return root


def test_vc_writes_no_formula_and_vcs_reads_the_real_names(tmp_path):
    root = _formula_root(tmp_path)
    context, out = make_context(root, width=400, WORKERS=1)
    assert run_command(context, "vc") == 0, out.getvalue()
    (path,) = (root / "temp" / "vector_compare").glob("*/*.csv")
    with open(path, newline="", encoding="utf-8") as handle:
        lines = list(csv.reader(handle))
    names = [line[2] for line in lines[1:]]  # NPUDump, as a spreadsheet gets it
    assert not [n for n in names if n[:1] in FORMULA_STARTS]
    assert {f"'{n}" for n in FORMULA_OPS if n[0] in "=+-@" or n.startswith("'=")} <= set(names)
    assert {row.npu_name for row in read_result_csv(path)} == {"input", *FORMULA_OPS}
    assert run_command(context, "vcs -c 1 -l 0") == 1  # cosine 1 <= 1: every op listed by name
    shown = out.getvalue()
    assert all(name in shown for name in ("=1", "-2+3", "'=already quoted"))
    assert "''=already quoted" not in shown and "'=1" not in shown
