"""PDFs read in a child process under a memory limit, so a file that exhausts memory or makes PDFium abort
costs an error message, never the studio's window with the user's unsaved text (Qt-free).

PDFium inflates content streams whole: a 4 MB file can ask for gigabytes, and where an allocation fails it ends
the process (SIGABRT). ``read_pdf_isolated`` runs ``pdf_reader.read_pdf`` in a child that limits its own address
space (``RLIMIT_AS``: what it holds after its imports plus ``MAX_PDF_MEMORY``) and processor time, and returns the
child's result; a child that dies or runs out is a ``DocumentError`` naming the file. The result comes back as
JSON, never pickle, so even a child that PDFium's bugs took over cannot run code in the parent.

The child is ``python -m engine.documents.pdf_worker``, or in a frozen app (no ``-m`` there) the app itself with
``--pdf-worker``, which main.py hands over before importing anything heavy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from engine.documents.model import KINDS, PARAGRAPH, Block, Document, DocumentError, Parsed, TocEntry

MAX_PDF_MEMORY = 2 << 30  # address space the child may take beyond its imports
MAX_PDF_CPU_SECONDS = 600  # processor time of one PDF, a backstop far above a real book's seconds
WORKER_FLAG = "--pdf-worker"
_MEMORY_SIGNALS = (signal.SIGABRT, signal.SIGSEGV, signal.SIGKILL, signal.SIGBUS, getattr(signal, "SIGTRAP", 5))


def worker_command() -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable, WORKER_FLAG]
    return [sys.executable, "-m", "engine.documents.pdf_worker"]


def read_pdf_isolated(path: Path, doc: Document) -> Parsed:
    """``read_pdf(path, doc)`` run in a child process under ``MAX_PDF_MEMORY``."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # where ``engine`` is imported from, for ``-m``
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    try:
        child = subprocess.run([*worker_command(), str(path), json.dumps(_limits())], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, check=False)
    except OSError as e:
        raise DocumentError(f"Cannot read “{path.name}”: the PDF reader did not start ({e.strerror or e}).") from e
    try:
        result = json.loads(child.stdout) if child.stdout else None
    except ValueError:
        result = None
    if child.returncode == -getattr(signal, "SIGXCPU", 24) or result and result.get("error") == "time":
        raise DocumentError(f"“{path.name}” takes longer to read than Orator allows for a PDF "
                            f"({MAX_PDF_CPU_SECONDS} s of processor time); it may be damaged or built to stall.")
    if result is None or result.get("error") == "memory":
        if result is not None or -child.returncode in _MEMORY_SIGNALS:
            raise DocumentError(f"“{path.name}” needs more memory to read than Orator allows for a PDF "
                                f"({MAX_PDF_MEMORY >> 20} MB); it may be damaged or built to exhaust memory.")
        raise DocumentError(f"“{path.name}” could not be read: the PDF reader stopped (exit status "
                            f"{child.returncode}).")
    if "error" in result:
        raise DocumentError(result["error"])
    doc.warnings.extend(result["warnings"])
    return _parsed(result["parsed"])


# ---- the child ------------------------------------------------------------------------------------------
def _limits() -> dict:
    """The bounds the child applies, as the parent has them (tests lower them here)."""
    from engine.documents import pdf_reader

    return {"memory": MAX_PDF_MEMORY, "pages": pdf_reader.MAX_PDF_PAGES, "page_chars": pdf_reader.MAX_PAGE_CHARS}


def worker_main(argv: list[str] | None = None) -> int:
    """Reads the PDF ``argv[0]`` under the bounds of ``argv[1]`` (``_limits``, as JSON): its address space may
    grow by ``memory`` bytes from what it holds after its imports. Writes the result as JSON to stdout."""
    path_text, limits_text = argv if argv is not None else sys.argv[1:3]
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, not into the result
    import pypdfium2  # noqa: F401 - its library is loaded before the limit is set

    from engine.documents import pdf_reader

    limits = json.loads(limits_text)
    pdf_reader.MAX_PDF_PAGES, pdf_reader.MAX_PAGE_CHARS = int(limits["pages"]), int(limits["page_chars"])
    _limit(int(limits["memory"]))
    path = Path(path_text)
    doc = Document(path=path, text="", title=path.stem)
    try:
        result = {"parsed": _plain(pdf_reader.read_pdf(path, doc)), "warnings": doc.warnings}
    except DocumentError as e:
        result = {"error": str(e)}
    except MemoryError:
        result = {"error": "memory"}
    except Exception as e:  # PDFium raises many kinds of errors on corrupt input
        result = {"error": f"“{path.name}” is not a valid PDF file ({type(e).__name__}: {e})."}
    json.dump(result, out)
    out.close()
    return 0


def _limit(memory: int) -> None:
    try:
        import resource
    except ImportError:  # Windows: no such limit; the file's own bounds still hold
        return
    held = 0
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            held = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        held = 1 << 30
    resource.setrlimit(resource.RLIMIT_AS, (held + memory, held + memory))
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (MAX_PDF_CPU_SECONDS, MAX_PDF_CPU_SECONDS + 5))
    except (ValueError, OSError):
        pass


def _plain(parsed: Parsed) -> dict:
    return {"blocks": [[b.text, b.level, b.anchors, b.kind] for b in parsed.blocks], "title": parsed.title,
            "author": parsed.author, "toc": None if parsed.toc is None else
            [[e.title, e.level, e.anchor] for e in parsed.toc], "fallback": parsed.fallback_anchors}


def _parsed(data: dict) -> Parsed:
    toc = None if data["toc"] is None else [TocEntry(str(t), int(level), str(a)) for t, level, a in data["toc"]]
    return Parsed([Block(str(text), int(level), [str(a) for a in anchors], kind if kind in KINDS else PARAGRAPH)
                   for text, level, anchors, kind in data["blocks"]],
                  str(data["title"]), str(data["author"]), toc,
                  {str(k): str(v) for k, v in dict(data["fallback"]).items()})


if __name__ == "__main__":
    sys.exit(worker_main())
