"""No module of the product (engine/, qtapp/, server/, main.py) is over 400 lines: a file that grows past it holds more
than one thing and is split where its parts meet."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 400


def test_no_product_module_is_over_the_limit():
    files = [ROOT / "main.py", *(p for top in ("engine", "qtapp", "server") for p in (ROOT / top).rglob("*.py"))]
    assert len(files) > 100
    sizes = {str(f.relative_to(ROOT)): len(f.read_text(encoding="utf-8").splitlines()) for f in files}
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not over, f"split these modules (over {MAX_LINES} lines): {over}"
