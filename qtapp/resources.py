"""Where the studio's bundled files live, from a source checkout and from a PyInstaller bundle.

``resource_path("orator.svg")`` is ``<repo>/resources/orator.svg`` when running from source and
``<bundle>/resources/orator.svg`` when frozen (PyInstaller unpacks data files under
``sys._MEIPASS``; ``packaging/orator.spec`` puts the ``resources`` folder there).
"""

from __future__ import annotations

import sys
from pathlib import Path

RESOURCES_FOLDER = "resources"


def resource_root() -> Path:
    """The folder holding the ``resources`` folder: the bundle when frozen, else the repository."""
    bundle = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and bundle:
        return Path(bundle)
    return Path(__file__).resolve().parent.parent


def resource_path(name: str) -> Path:
    """The path of the bundled file ``name`` (it may not exist: callers check)."""
    return resource_root() / RESOURCES_FOLDER / name
