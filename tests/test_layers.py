"""Arrows point down: ``shell -> commands -> compare -> formats`` (STYLE.md, "The house").

Every import of every module is read from its source with ``ast`` (nothing is imported), so a
new upward import fails here however it is written (absolute, relative, inside a function).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "precision_tool"

# a layer may import itself and the layers listed for it, nothing else of the package
ALLOWED = {
    "formats": {"formats", "errors"},
    "compare": {"compare", "formats", "errors", "config"},
    "checks": {"checks", "compare", "formats", "errors", "config", "context"},
    "explain": {"explain", "compare", "formats", "errors", "config", "context"},
    "render": {"render", "compare", "formats", "errors", "checks", "explain"},
    "model_explorer": {"model_explorer", "compare", "formats", "errors", "render"},
    "report": {
        "report",
        "render",
        "compare",
        "formats",
        "errors",
        "config",
        "context",
        "checks",
        "explain",
        "model_explorer",
    },
    "commands": {
        "commands",
        "checks",
        "compare",
        "formats",
        "render",
        "errors",
        "config",
        "context",
        "status",
        "sample",
        "explain",
        "report",
        "model_explorer",
    },
    "shell": {"shell", "commands", "render", "formats", "errors", "context", "status", "config"},
}


# the package root's constants, the one error type, how worker processes live and die, how
# many idle cores there are for them, and when the process's garbage collector is paused
EVERYWHERE = {"__version__", "errors", "lifetime", "idle_cores", "collector"}


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "precision_tool" else None


def _imports(path: Path) -> set[str]:
    module = "precision_tool." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in _walk_runtime(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            if not node.module:  # "from . import x": x is a module of that package
                found.update(f"{target}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("precision_tool")}


def _walk_runtime(tree: ast.AST):
    """Every node, except what is under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_point_down(layer):
    wrong = []
    for path in _modules(layer):
        for name in _imports(path):
            target = _layer_of(name)
            if target is not None and target not in ALLOWED[layer] | EVERYWHERE:
                wrong.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_relative_imports():
    assert "precision_tool.compare.metrics" in _imports(PACKAGE / "compare" / "engine.py")
    assert any(_layer_of(n) == "formats" for n in _imports(PACKAGE / "compare" / "golden_pairing.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(("precision_tool",) + (parts[:-1] if parts[-1] == "__init__" else parts))


def test_no_two_modules_import_each_other():
    graph = {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py")}
    pairs = sorted(
        {
            tuple(sorted((a, b)))
            for a, targets in graph.items()
            for b in targets
            if b != a and a in graph.get(b, ()) and not a.startswith(b + ".") and not b.startswith(a + ".")
        }
    )
    assert not pairs, pairs


def test_render_only_renders():
    """render/ turns results into renderables and text; it writes no file and runs no program."""
    banned = {"subprocess", "shutil", "tempfile"}
    wrong = []
    for path in _modules("render"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        calls = {
            node.func.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        if imported & banned or calls & {"write_text", "write_bytes", "mkdir"}:
            wrong.append(str(path.relative_to(PACKAGE)))
    assert not wrong, wrong
