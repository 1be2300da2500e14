"""No project module uses another's private names, and no import cycle, counting imports inside functions
(tools/import_rules.py).

``PENDING`` lists the violations found when the rules came, each in a file its owner was editing then: a fix
removes its entry. Nothing else may be added: a new private use or cycle fails here.
"""

from __future__ import annotations

from pathlib import Path

from tools import import_rules

# (file, owner module, private name): each to be made public in its owner (or its use removed)
PENDING_PRIVATE: set[tuple[str, str, str]] = set()
# the imports that close the cycles still open: once each is gone, so are the cycles
PENDING_IMPORTS: set[tuple[str, str]] = set()


def test_no_module_uses_another_modules_private_names():
    found = import_rules.private_uses()
    new = [str(use) for use in found if (use.path, use.owner, use.name) not in PENDING_PRIVATE]
    assert not new, "private names used across modules (make them public in their owner):\n" + "\n".join(new)


def test_every_pending_private_use_is_still_there():
    found = {(use.path, use.owner, use.name) for use in import_rules.private_uses()}
    assert not PENDING_PRIVATE - found, f"fixed: remove from PENDING_PRIVATE: {sorted(PENDING_PRIVATE - found)}"


def test_no_import_cycle():
    graph = import_rules.import_graph()
    for importer, imported in PENDING_IMPORTS:
        graph[importer].discard(imported)
    found = import_rules.cycles(graph)
    assert not found, "\n".join(import_rules.describe_cycle(component, graph) for component in found)


def test_every_pending_import_is_still_there():
    graph = import_rules.import_graph()
    gone = sorted(edge for edge in PENDING_IMPORTS if edge[1] not in graph[edge[0]])
    assert not gone, f"fixed: remove from PENDING_IMPORTS: {gone}"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_private_names_are_found_imported_and_reached_through_modules(tmp_path):
    write(tmp_path, {
        "engine/__init__.py": "",
        "engine/a.py": "_x = 1\n__version__ = '1'\npublic = 2\n",
        "engine/sub/__init__.py": "",
        "engine/sub/b.py": "_y = 1\n",
        "engine/sub/_hidden.py": "",
        "server/__init__.py": "",
        "server/c.py": ("from engine.a import _x, __version__, public\n"
                        "import engine.sub.b\n"
                        "import engine.sub._hidden\n"
                        "from engine import a as alias\n"
                        "from os import _exit\n"
                        "def f():\n"
                        "    from ..engine.sub import b\n"
                        "    return engine.sub.b._y + alias._x + alias.public + b._y\n"),
        "engine/sub/d.py": "from . import b\nfrom .b import _y\nfrom .d import _own\n_own = b._y\n",
    })
    found = {(use.path, use.line, use.owner, use.name) for use in import_rules.private_uses(root=tmp_path)}
    assert found == {
        ("server/c.py", 1, "engine.a", "_x"),
        ("server/c.py", 3, "engine.sub", "_hidden"),
        ("server/c.py", 8, "engine.sub.b", "_y"),
        ("server/c.py", 8, "engine.a", "_x"),
        ("engine/sub/d.py", 2, "engine.sub.b", "_y"),
        ("engine/sub/d.py", 4, "engine.sub.b", "_y"),
    }


def test_cycles_are_the_strongly_connected_components():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert import_rules.cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert import_rules.cycles({"a": {"b"}, "b": set()}) == []
    text = import_rules.describe_cycle(["d", "e"], graph)
    assert text.splitlines() == ["import cycle of 2 modules: d, e", "  d imports e", "  e imports d"]
