"""Nothing read from disk is executed or unpickled; config, mapping.csv and output names cannot
be used to reach outside the places the tool reads and writes."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

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
    bad.write_text("import pickle\nimport numpy as np\nnp.load('x')\nnp.load('y', allow_pickle=True)\n"
                   "eval('1')\nimport subprocess\nsubprocess.run('ls', shell=True)\n")
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
    (tmp_path / "config.py").write_text(f"open({str(marker)!r}, 'w').close()\nVCS_LIMIT = 4\n"
                                        f"WORKERS = __import__('os').system('touch {marker}')\n")
    with pytest.raises(Exception, match="must be a literal"):
        load_config({}, environ={}, cwd=tmp_path)
    assert not marker.exists()


# --- mapping.csv cannot escape its directory -----------------------------------------------------

ESCAPES = ["../x", "..", "../../etc/passwd", "/etc/passwd", "a/../../b", "..\\..\\b", "c:\\x",
           "x\0y", f"Relu.{'..'}.1.0.{TS}"]


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
    (tmp_path / f"Relu.outside.1.0.{TS}").write_bytes(build_dump("o", [], [TensorSpec(np.ones(2, np.float32), "FLOAT")]))
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
    graph = build_model([OpSpec("in", "Data", [], [desc], [desc]),
                         OpSpec(HOSTILE_OP, "Relu", ["in:0"], [desc], [desc])], name=model)
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
    for line in ("vc --step '0'", f"pt '{step / '77'}'", f"pt '{odd}'", f"dc '{step / '77'}'",
                 f"dc '{odd}'", f"ni '{HOSTILE_OP}' -s 1", f"vc -o '{tmp_path / 'out_dir'}'"):
        assert run_command(context, line) in (0, 1), (line, out.getvalue())
    created = {p for p in tmp_path.rglob("*")} - before
    files = [p for p in created if p.is_file()]
    assert len(files) >= 8, out.getvalue()
    for path in files:
        assert path.is_relative_to(root / "temp") or path.parent == tmp_path / "out_dir", path
        assert len(path.name.encode()) <= 255 and ".." not in path.name, path
        assert not path.name.startswith("."), path  # no temporary file left behind
