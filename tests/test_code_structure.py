"""The shape of the code base, pinned: what the pipeline redesign promised stays true.

* no function in ``dpaudit/`` longer than 80 lines (its docstring not counted);
* no function in ``dpaudit/`` with more than 10 parameters, outside the two public engine
  entry points (``audit`` and ``blackbox_audit`` keep the keyword signatures users type and
  hand one options record to their engine);
* no private name imported across modules (``from m import _x`` or ``m._x``
  on another module), in the package, the catalogue and the tests;
* only :mod:`dpaudit.model.registry` imports the catalogue package ``mechanisms``;
* no module named like a function re-exported at the top level of ``dpaudit``;
* no file refers to a path outside the repository.
"""

import ast
import functools
import re
import subprocess
from pathlib import Path

import dpaudit

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 10
#: ``(file name, function)`` of the keyword entry points: each builds one options record
#: (``AuditOptions``, ``BlackBoxOptions``) that the engine's stages read.
KEYWORD_ENTRY_POINTS = {("engine.py", "audit"), ("engine.py", "blackbox_audit")}
#: Public functions of the testing tier still over the limit: their keyword arguments are
#: pinned by bad-input tests that must pass unmodified, so they wait for a search options
#: record of their own. Listed here so that no other function joins them and each must
#: leave the list once fixed.
OVER_THE_LIMIT = {("assertions.py", "assert_sensitivity_bound"), ("search.py", "worst_neighbours")}


@functools.cache
def _parse(text: str) -> ast.Module:
    """The syntax tree of a file's text, parsed once for every test of this file (the tests
    only read the trees; each one parsed the whole package again)."""
    return ast.parse(text)


def _tree(path: Path) -> ast.Module:
    return _parse(path.read_text())


def _python_files(*folders):
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _docstring_lines(node) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            return body[0].end_lineno - body[0].lineno + 1
    return 0


def test_no_long_functions_in_the_package():
    long = []
    for path in _python_files("dpaudit"):
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1 - _docstring_lines(node)
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.name} ({n} lines)")
    assert not long, long


def _parameter_count(node) -> int:
    """Parameters a caller can pass: named ones (not ``self``/``cls``), ``*args``, ``**kwargs``."""
    args = node.args
    named = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    named = [a for a in named if a not in ("self", "cls")]
    return len(named) + (args.vararg is not None) + (args.kwarg is not None)


def _functions_over_the_parameter_limit() -> set[tuple[str, str]]:
    over = set()
    for path in _python_files("dpaudit"):
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if _parameter_count(node) > MAX_PARAMETERS:
                    over.add((path.name, node.name))
    return over


def test_no_function_takes_more_than_ten_parameters():
    over = _functions_over_the_parameter_limit()
    assert over - KEYWORD_ENTRY_POINTS - OVER_THE_LIMIT == set()
    assert over >= OVER_THE_LIMIT, f"fixed: drop {OVER_THE_LIMIT - over} from OVER_THE_LIMIT"


def test_the_parameter_count_sees_every_kind_of_parameter():
    tree = ast.parse(
        "class C:\n"
        "    def f(self, a, /, b, *args, c, **kwargs): pass\n"
        "def g(a, b=1, *, c=2): pass\n"
    )
    counts = {n.name: _parameter_count(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert counts == {"f": 5, "g": 3}


def test_the_engines_take_their_options_as_one_record():
    """The engines' internals get the options record, not a list of keywords or positions."""
    for path in _python_files("dpaudit"):
        if path.name != "engine.py":
            continue
        text = path.read_text()
        assert "# fmt: off" not in text, path  # the 17-positional _plan was written under it
        for node in ast.walk(_parse(text)):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("run_"):
                assert _parameter_count(node) <= 5, (path.name, node.name)


def _module_names(path: Path) -> set[str]:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return {".".join(parts)}


def test_no_private_names_imported_across_modules():
    found = []
    for path in _python_files("dpaudit", "mechanisms", "tests", "benchmarks"):
        tree = _tree(path)
        own = _module_names(path)
        imported_modules = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                root = node.module.split(".")[0]
                if root not in ("dpaudit", "mechanisms") or node.module in own:
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(
                            f"{path.relative_to(ROOT)}: from {node.module} import {alias.name}"
                        )
                    else:
                        imported_modules[alias.asname or alias.name] = node.module
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in ("dpaudit", "mechanisms"):
                        imported_modules[alias.asname or alias.name.split(".")[0]] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in imported_modules
            ):
                found.append(f"{path.relative_to(ROOT)}: {node.value.id}.{node.attr}")
    assert not found, found


def test_nothing_in_the_package_imports_the_catalogue():
    importers = []
    for path in _python_files("dpaudit"):
        for node in ast.walk(_tree(path)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(n == "mechanisms" or n.startswith("mechanisms.") for n in names):
                importers.append(str(path.relative_to(ROOT)))
    assert not importers, importers
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '[project.entry-points."dpaudit.catalogues"]\nmechanisms = "mechanisms"' in pyproject


#: The layers of ``dpaudit/``, lowest first. A module imports only modules of its own layer
#: or of a lower rank; the two engines share a rank and do not import each other.
LAYERS = {
    "core": 0,
    "accounting": 1,
    "model": 2,
    "estimation": 3,
    "whitebox": 4,
    "blackbox": 4,
    "training": 4,
    "testing": 5,
    "adapters": 5,
    "io": 6,
    "runtime": 7,
    "cli": 8,
}

#: The only function-level imports of dpaudit's own modules, each for a heavy dependency
#: loaded on demand: ``(importer, imported) -> reason``. They count as imports below.
DEFERRED_IMPORTS = {
    **{
        ("dpaudit.cli.main", target): "`dpaudit --help` answers without loading JAX"
        for target in (
            "dpaudit.io.datasets",
            "dpaudit.io.report",
            "dpaudit.io.spec",
            "dpaudit.model.adjacency",
            "dpaudit.model.claims",
            "dpaudit.model.parameter_checks",
            "dpaudit.model.registry",
            "dpaudit.runtime",
            "dpaudit.blackbox.result",
            "dpaudit.blackbox.drawhelper",
            "dpaudit.estimation.significance",
            "dpaudit.testing.record_spaces",
            "dpaudit.testing.assertions",
            "dpaudit.cli.regression",
            "dpaudit.testing.worst_pair",
            "dpaudit.whitebox.scope",
            "dpaudit.io.plot.whitebox",
        )
    },
    ("dpaudit.io.report", "dpaudit.io.plot"): "matplotlib (optional) only for a figure",
    ("dpaudit.io.report", "dpaudit.io.plot.blackbox"): "matplotlib (optional) only for a figure",
}


def _package_modules(package: Path) -> dict[str, Path]:
    return {next(iter(_module_names(p))): p for p in sorted(package.rglob("*.py"))}


def _imports_of(name: str, path: Path, modules) -> list[tuple[str, bool]]:
    """``(imported module, at function level)`` for each import of the package's own modules."""
    found = []

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target if target and target not in (name, "dpaudit") else None

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            deferred = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            targets = []
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                targets = [f"{child.module}.{a.name}" for a in child.names]
            for target in targets:
                if target.split(".")[0] == "dpaudit" and (module := resolve(target)):
                    found.append((module, deferred))
            visit(child, deferred)

    visit(_tree(path), False)
    return found


def _import_graph(root: Path) -> tuple[dict[str, set[str]], list[str]]:
    """The import graph of ``root/dpaudit`` and the unlisted function-level imports."""
    modules = _package_modules(root / "dpaudit")
    graph: dict[str, set[str]] = {name: set() for name in modules}
    unlisted = []
    for name, path in modules.items():
        for module, deferred in _imports_of(name, path, modules):
            graph[name].add(module)
            if deferred and (name, module) not in DEFERRED_IMPORTS:
                unlisted.append(f"{name} -> {module}")
    return graph, sorted(set(unlisted))


def _layer(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports of a module of a higher layer, or of a sibling layer."""
    found = []
    for name, targets in graph.items():
        for target in targets:
            own, other = _layer(name), _layer(target)
            if own != other and not LAYERS.get(other, 99) < LAYERS.get(own, -1):
                found.append(f"{name} -> {target}")
    return sorted(found)


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return cycles


def test_every_module_lives_in_a_layer():
    assert set(LAYERS) == {p.name for p in (ROOT / "dpaudit").iterdir() if p.is_dir()} - {
        "__pycache__"
    }
    top = sorted(p.name for p in (ROOT / "dpaudit").glob("*.py"))
    assert top == ["__init__.py"], top


def test_imports_go_one_way():
    graph, unlisted = _import_graph(ROOT)
    assert not unlisted, f"function-level imports of dpaudit modules: {unlisted}"
    assert not upward_imports(graph), upward_imports(graph)
    assert not import_cycles(graph), import_cycles(graph)


def test_no_module_named_like_a_top_level_function():
    functions = {
        n
        for n in dpaudit.__all__
        if callable(getattr(dpaudit, n)) and not isinstance(getattr(dpaudit, n), type)
    }
    modules = {p.stem for p in _python_files("dpaudit")} | {
        p.name for p in (ROOT / "dpaudit").rglob("*") if p.is_dir()
    }
    assert not functions & modules, functions & modules


# The forms an outside reference took: a path up out of the checkout into the
# development workspace, the name of the specification file kept there, its section
# signs and numbered items. Spelled in pieces so this file does not match itself.
_SPEC_FILE = "seed" + "_" + "dig" + "est"
_OUTSIDE = re.compile(
    "|".join(
        [
            r"\.\./" + "sha" + "red",
            _SPEC_FILE,
            "dig" + "est §",
            r"\b" + "tr" + r"ap \d+",
            "/" + "work" + "/",
        ]
    )
)


def test_no_reference_outside_the_repository():
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    offending = []
    for name in files:
        path = ROOT / name
        if (
            path.suffix not in (".py", ".md", ".toml", ".ipynb", ".txt", ".cfg", ".json", "")
            or not path.is_file()
        ):
            continue
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if _OUTSIDE.search(line):
                offending.append(f"{name}:{i}: {line.strip()[:80]}")
    assert not offending, offending[:40]


def _public_functions(path: Path):
    """Public module-level functions and public methods of public classes, with their docstrings."""
    tree = _tree(path)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            yield node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
                    if not any(
                        isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list
                    ):
                        yield item


def _takes_arguments(node) -> bool:
    args = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    args = [a for a in args if a not in ("self", "cls")]
    return bool(args or node.args.vararg or node.args.kwarg)


def args_coverage() -> tuple[int, int]:
    """(functions documenting their arguments, public functions taking arguments) in dpaudit/."""
    documented = total = 0
    for path in _python_files("dpaudit"):
        for node in _public_functions(path):
            if not _takes_arguments(node):
                continue
            total += 1
            documented += "Args:" in (ast.get_docstring(node) or "")
    return documented, total


def test_public_functions_document_their_arguments():
    documented, total = args_coverage()
    assert documented >= 0.9 * total, f"{documented} of {total} public functions have Args"
