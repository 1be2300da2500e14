"""What a killed export leaves behind, and its removal: the temporary files an export is writing are recorded in
the segment cache's ``pending`` folder (``record_pending``), the record dropped when the export ends
(``clear_pending``), and ``remove_leftovers``, run by the next export to the same target, removes the files a
record names. A kill cannot run an export's own clean-up; this is what stands in for it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from engine import json_limits
from engine.production.segment_cache import SegmentCache


def record_pending(cache: SegmentCache | None, target: Path, temps: list[Path]) -> None:
    """Record ``temps`` as the files an export to ``target`` is writing (without a cache, nothing is recorded)."""
    if cache is not None:
        record = pending_record(cache, target)
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps([str(t) for t in temps]), encoding="utf-8")


def clear_pending(cache: SegmentCache | None, target: Path) -> None:
    """Drop the record of an export to ``target`` that ended, its temporary files removed."""
    if cache is not None:
        pending_record(cache, target).unlink(missing_ok=True)


def remove_leftovers(cache: SegmentCache, target: str | os.PathLike) -> None:
    """Remove the temporary files a killed export to ``target`` recorded in ``cache`` (only those: never a guess)."""
    target = Path(target)
    record = pending_record(cache, target)
    if not record.exists():
        return
    try:
        names = json_limits.load_file(record)
    except (OSError, ValueError):
        names = []
    for name in names if isinstance(names, list) else []:
        path = Path(str(name))
        if path.parent == target.parent and path.name.startswith(".orator-"):
            path.unlink(missing_ok=True)
    record.unlink(missing_ok=True)


def pending_record(cache: SegmentCache, target: Path) -> Path:
    """The file in ``cache`` that records what an export to ``target`` is writing."""
    name = hashlib.sha256(str(target.resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return cache.folder / "pending" / f"{name}.json"
