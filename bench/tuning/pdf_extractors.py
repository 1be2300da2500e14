"""Compare PDF text extractors (pypdf, pdfminer.six, pypdfium2) on real PDFs against the HTML of the same manual.

For each PDF and extractor it prints: the share of tokens longer than 25 letters (words run together), the
number of PDF tokens that are no word of the HTML but split into two of its words (run together), the number of
adjacent token pairs that are no words but join into one (split words: "manip- ulation", "Deb ian"), the share
of the HTML's 6-word shingles found in the PDF text (word spacing and reading order together), and the time per
page. Needs pypdf and pdfminer.six installed besides the gui extra (only the chosen pypdfium2 is a dependency).
The last row, "orator", is what the studio reads (pypdfium2 plus engine/documents/pdf_reader.py's rules); the
"wordless segments" column counts what engine.core.text.segments.split_segments makes of the text that holds no letter.
Usage: python -m bench.tuning.pdf_extractors PDF:HTML[,HTML...] ...
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

WORD = re.compile(r"[A-Za-z]+")


def pypdf_text(path: str) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(path).pages]


def pdfminer_text(path: str) -> list[str]:
    from pdfminer.high_level import extract_text

    return extract_text(path).split("\f")


def pdfium_text(path: str) -> list[str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    pages = []
    for page in pdf:
        textpage = page.get_textpage()
        pages.append(textpage.get_text_bounded())
        textpage.close()
        page.close()
    pdf.close()
    return pages


def orator_text(path: str) -> list[str]:
    """What the studio reads: pypdfium2 plus the rules of engine/documents/pdf_reader.py."""
    from engine.documents import load_document

    return [load_document(path).text]


EXTRACTORS = {"pypdf": pypdf_text, "pdfminer.six": pdfminer_text, "pypdfium2": pdfium_text,
              "orator": orator_text}


def html_words(paths: list[str]) -> list[str]:
    """The words of the HTML pages, read plainly with lxml (not with the importer being measured)."""
    from lxml import etree

    words: list[str] = []
    for path in paths:
        root = etree.parse(path, etree.HTMLParser(remove_comments=True)).getroot()
        for tag in root.iter("script", "style", "head"):
            tag.getparent().remove(tag)
        words += WORD.findall(" ".join(root.itertext()))
    return words


def wordless_segments(text: str) -> int:
    """Segments the reader would speak that hold no letter (dot leaders, page and section numbers)."""
    from engine.core.text.segments import split_segments

    return sum(not re.search(r"[^\W\d_]", s.text) for s in split_segments(text))


def measure(text: str, truth: list[str]) -> dict:
    vocab = {w.lower() for w in truth}
    # a line-end hyphen (pdfium marks it U+0002, at a line end or not) is joined before counting
    tokens = WORD.findall(re.sub(r"(?<=[a-z])(?:-\s*\n|\x02)\s*(?=[a-z])", "", text))
    lower = [t.lower() for t in tokens]
    long_share = sum(len(t) > 25 for t in tokens) / max(1, len(tokens))
    run_together = 0
    for t in lower:
        if t not in vocab and len(t) >= 6:
            run_together += any(t[:i] in vocab and t[i:] in vocab for i in range(2, len(t) - 1))
    split = sum(1 for a, b in zip(lower, lower[1:], strict=False)
                if (a not in vocab or b not in vocab) and a + b in vocab and len(a + b) >= 5)
    grams = {" ".join(lower[i:i + 6]) for i in range(len(lower) - 5)}
    truth_lower = [w.lower() for w in truth]
    truth_grams = {" ".join(truth_lower[i:i + 6]) for i in range(len(truth_lower) - 5)}
    recall = len(grams & truth_grams) / max(1, len(truth_grams))
    return {"tokens": len(tokens), "long_share": long_share, "run_together": run_together,
            "split": split, "shingles": recall, "wordless": wordless_segments(text)}


def main(argv: list[str]) -> None:
    print("| PDF | extractor | tokens | >25 letters | run together | split | 6-gram recall | wordless segments "
          "| time/page |")
    print("|---|---|---|---|---|---|---|---|---|")
    for arg in argv:
        pdf, htmls = arg.split(":", 1)
        truth = html_words(htmls.split(","))
        n_pages = len(pypdf_text(pdf))
        for name, extract in EXTRACTORS.items():
            started = time.perf_counter()
            pages = extract(pdf)
            seconds = time.perf_counter() - started
            m = measure("\n".join(pages), truth)
            print(f"| {Path(pdf).name} ({n_pages} p.) | {name} | {m['tokens']} | {m['long_share']:.4f} | "
                  f"{m['run_together']} | {m['split']} | {m['shingles']:.3f} | {m['wordless']} | "
                  f"{1000 * seconds / n_pages:.1f} ms |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
