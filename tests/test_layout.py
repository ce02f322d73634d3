"""The package layout: no import cycle between modules — counting the imports inside functions,
which run later but still tie the modules together — no module above ~500 lines, every
subpackage importable on its own and exporting what its ``__all__`` names."""

import ast
import importlib
import inspect
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "jaxmtl"
MAX_LINES = 520


def _modules(package: pathlib.Path = PACKAGE):
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        yield ".".join(parts), path, is_pkg


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute names of the jaxmtl modules an ``import from`` statement loads."""
    if node.level:
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not target.startswith(module.split(".")[0]):
        return []
    return [target] + [f"{target}.{a.name}" for a in node.names]


def _import_graph(package: pathlib.Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at module level or inside a function."""
    known = {name for name, _, _ in _modules(package)}
    graph: dict[str, set[str]] = {}
    for name, path, is_pkg in _modules(package):
        tree = ast.parse(path.read_text())
        deps: set[str] = set()
        for node in ast.walk(tree):  # every import, also those deferred into functions
            if isinstance(node, ast.ImportFrom):
                deps.update(t for t in _resolve(name, is_pkg, node) if t in known and t != name)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in known)
        graph[name] = deps
    return graph


def _parents(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycle_between_modules():
    _check_no_cycle(_import_graph())


def _check_no_cycle(graph: dict[str, set[str]]) -> None:
    # a package's __init__ re-exports its children: an edge child -> its own parent package is the
    # only kind Python resolves without a cycle, so edges into a module's own ancestors are excluded
    edges = {m: {d for d in deps if d not in _parents(m)} for m, deps in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in edges.get(m, ()):
            if state.get(d) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(d):] + [d]))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)


def test_the_cycle_detector_finds_a_cycle():
    with pytest.raises(AssertionError, match="import cycle"):
        _check_no_cycle({"jaxmtl.a": {"jaxmtl.b"}, "jaxmtl.b": {"jaxmtl.a"}})


def test_a_cycle_through_a_function_level_import_is_caught(tmp_path):
    """A planted package whose only cycle runs through an import inside a function."""
    pkg = tmp_path / "planted"
    (pkg / "io").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "io" / "__init__.py").write_text("")
    (pkg / "io" / "persistence.py").write_text("def save(model):\n    from ..model import Model\n    return Model\n")
    (pkg / "model.py").write_text("from .io.persistence import save\n\nclass Model:\n    pass\n")
    graph = _import_graph(pkg)
    assert graph["planted.io.persistence"] == {"planted.model"}
    with pytest.raises(AssertionError, match="import cycle: .*planted.io.persistence.*planted.model"):
        _check_no_cycle(graph)
    (pkg / "io" / "persistence.py").write_text("def save(model):\n    return type(model)\n")  # the circle removed
    _check_no_cycle(_import_graph(pkg))


def test_the_persistence_layer_imports_no_model():
    """jaxmtl.io knows the estimators and the mixed-effect server only through the registry they fill."""
    models = ("jaxmtl.models", "jaxmtl.mixed_effect", "jaxmtl.mkl", "jaxmtl.solvers", "jaxmtl.learning")
    for module, deps in _import_graph().items():
        if module.startswith("jaxmtl.io"):
            assert not [d for d in deps if d.startswith(models)], (module, sorted(deps))


@pytest.mark.parametrize("name,path", [(n, p) for n, p, _ in _modules()], ids=lambda v: str(v))
def test_module_is_small_and_exports_what_it_names(name, path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines (limit {MAX_LINES}): split it by concept"
    module = importlib.import_module(name)
    for exported in getattr(module, "__all__", ()):
        assert hasattr(module, exported), f"{name}.__all__ names {exported!r}, which it does not define"


# ------------------------------------------------------------------ annotations of the public API
def _public_namespaces() -> list:
    """jaxmtl, every subpackage, and the modules their ``__all__`` exports (e.g. kernels.outputs)."""
    import pkgutil

    root = importlib.import_module("jaxmtl")
    found = [root] + [importlib.import_module(f"jaxmtl.{m.name}")
                      for m in pkgutil.iter_modules(root.__path__) if m.ispkg]
    for ns in list(found):
        found += [v for n in getattr(ns, "__all__", ()) if inspect.ismodule(v := getattr(ns, n))]
    return list({ns.__name__: ns for ns in found}.values())


def _public_callables(namespace) -> list[tuple[str, object]]:
    """(name, function) of every public function, and of every public method, ``__init__`` and
    ``__call__`` of every public class (inherited ones too) defined in jaxmtl."""
    out = []
    for name in getattr(namespace, "__all__", ()):
        obj = getattr(namespace, name)
        if inspect.isclass(obj):
            for attr in dir(obj):
                if attr.startswith("_") and attr not in ("__init__", "__call__"):
                    continue
                member = inspect.getattr_static(obj, attr)
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if inspect.isfunction(member):
                    out.append((f"{name}.{attr}", member))
        elif inspect.isfunction(obj) or callable(getattr(obj, "__wrapped__", None)):
            out.append((name, obj))
    return [(n, f) for n, f in out if getattr(f, "__module__", "").startswith("jaxmtl")]


def _missing_annotations(fn) -> list[str]:
    """Parameters (but self / cls / *args / **kwargs) without an annotation, and 'return' if unannotated."""
    sig = inspect.signature(fn)
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    missing = [p.name for p in sig.parameters.values()
               if p.name not in ("self", "cls") and p.kind not in skip and p.annotation is p.empty]
    return missing + (["return"] if sig.return_annotation is sig.empty else [])


def test_public_signatures_are_annotated():
    gaps, seen, n_checked = [], set(), 0
    for namespace in _public_namespaces():
        for name, fn in _public_callables(namespace):
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            n_checked += 1
            if missing := _missing_annotations(fn):
                gaps.append(f"{namespace.__name__}.{name}: {', '.join(missing)}")
    assert n_checked > 300, n_checked  # the walk reaches the whole public API
    assert not gaps, "public callables with unannotated parameters or return:\n" + "\n".join(gaps)


def test_the_annotation_check_finds_a_gap():
    def partly(self, x: int, y, *args, scale: float = 1.0, **kwargs):
        return x

    def full(cls, x: int, *args, **kwargs) -> int:
        return x

    assert _missing_annotations(partly) == ["y", "return"]
    assert _missing_annotations(full) == []
