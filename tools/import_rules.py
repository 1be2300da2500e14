"""Two import rules the layer contracts of pyproject.toml cannot say: no private names across modules, no cycles.

- A module's private names (``_name``, not ``__dunder__``) are its own: no other project module imports one
  (``from engine.x import _y``) or reaches one through a module it imported (``x._y``). A name another module needs
  is part of its owner's interface and is named as such.
- No two project modules import each other, directly or through others, counting the imports made inside functions
  (grimp's graph holds them; an import moved into a function hides a cycle from Python, not from the design).
  Imports under ``if TYPE_CHECKING:`` are left out: they never run, and import-linter's layers still see them.

Both look at ``engine/``, ``qtapp/``, ``server/``, ``bench/``, ``tools/`` and ``main.py``; tests may use the private
names of the module they test. ``python -m tools.import_rules`` prints every violation and exits 1 if there is any
(tests/tools/test_import_rules.py asserts there are none beyond the ones it lists as pending).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "qtapp", "server", "bench", "tools")
TOP_MODULES = ("main",)


@dataclass(frozen=True)
class PrivateUse:
    """A private name of ``owner`` used in ``path`` at ``line``."""

    path: str
    line: int
    owner: str
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.owner}.{self.name} is private to {self.owner}"


def source_files(root: Path = ROOT) -> list[Path]:
    """The project's Python files the rules apply to, relative to ``root``."""
    found = [root / f"{name}.py" for name in TOP_MODULES if (root / f"{name}.py").exists()]
    for package in PACKAGES:
        found += (path for path in (root / package).rglob("*.py")
                  if not any(part.startswith((".", "__pycache__")) for part in path.relative_to(root).parts))
    return sorted(path.relative_to(root) for path in found)


def module_name(path: Path) -> str:
    """``engine/core/x.py`` -> ``engine.core.x``; a package's ``__init__.py`` is the package."""
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_project(module: str) -> bool:
    return module.split(".")[0] in PACKAGES + TOP_MODULES


def is_module(module: str, root: Path = ROOT) -> bool:
    """Whether a dotted name is a module or package of the project (not a name defined in one)."""
    base = root.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The module a ``from ... import`` names, relative imports resolved against the importer."""
    if not node.level:
        return node.module or ""
    parts = importer.split(".")
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for anything but names and attributes."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(names)]


def private_uses_in(path: Path, root: Path = ROOT) -> Iterator[PrivateUse]:
    """The private names of other project modules that one file imports or reaches through a module."""
    importer = module_name(path)
    tree = ast.parse((root / path).read_text(encoding="utf-8"), filename=str(path))
    modules: dict[str, str] = {}  # a local name bound to a project module -> that module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not is_project(alias.name):
                    continue
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
                for part in alias.name.split(".")[1:]:
                    if is_private(part):
                        yield PrivateUse(path.as_posix(), node.lineno, alias.name.rsplit(".", 1)[0], part)
        elif isinstance(node, ast.ImportFrom):
            owner = _absolute(node, importer, path.name == "__init__.py")
            if not is_project(owner) or owner == importer:
                continue
            for alias in node.names:
                if is_private(alias.name):
                    yield PrivateUse(path.as_posix(), node.lineno, owner, alias.name)
                elif is_module(f"{owner}.{alias.name}", root):
                    modules[alias.asname or alias.name] = f"{owner}.{alias.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        names = _dotted(node)
        if names is None or names[0] not in modules:
            continue
        owner = modules[names[0]]
        for name in names[1:-1]:  # down the chain while it names submodules: ``engine.core.x._y``
            if not is_module(f"{owner}.{name}", root):
                break
            owner = f"{owner}.{name}"
        else:
            if is_private(names[-1]) and owner != importer:
                yield PrivateUse(path.as_posix(), node.lineno, owner, names[-1])


def private_uses(paths: Iterable[Path] | None = None, root: Path = ROOT) -> list[PrivateUse]:
    """Every private name of a project module used by another, sorted by place."""
    found = {use for path in (source_files(root) if paths is None else paths) for use in private_uses_in(path, root)}
    return sorted(found, key=lambda use: (use.path, use.line, use.owner, use.name))


def import_graph(packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """Each project module -> the project modules it imports anywhere in its body (TYPE_CHECKING imports left out)."""
    import grimp

    graph = grimp.build_graph(*packages, include_external_packages=False, exclude_type_checking_imports=True)
    return {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, without recursion), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def describe_cycle(component: list[str], graph: dict[str, set[str]]) -> str:
    """A cycle's modules and the imports that join them, one a line."""
    members = set(component)
    lines = [f"import cycle of {len(component)} modules: {', '.join(component)}"]
    lines += [f"  {module} imports {target}" for module in component for target in sorted(graph[module] & members)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    del argv  # no options: every rule runs
    sys.path.insert(0, str(ROOT))
    uses = private_uses()
    graph = import_graph()
    found = cycles(graph)
    for use in uses:
        print(use)
    for component in found:
        print(describe_cycle(component, graph))
    return 1 if uses or found else 0


if __name__ == "__main__":
    sys.exit(main())
