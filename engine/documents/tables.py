"""A table's rows as blocks read aloud, each cell with its column's header; every reader of tables uses it (Qt-free).

A row is one block of kind TABLE_ROW: each cell labelled with its column's header, "Name: Alice; Age: 30", so a
listener hears what each value is without holding the header row in mind; the header row is then not read on its
own (its words are in every row that has a value in that column). Stacked header rows add up ("Support read"); a
merged cell labels and fills each column it spans. A table without headers is read row by row, its cells joined by
", " (or "; " when a cell holds a comma). An empty cell is not read; a cell of symbols only ("✓", "—") is kept as
written, and the reading policy says a word for it (engine.core.text.spoken_symbols).
"""

from __future__ import annotations

from engine.documents.model import TABLE_ROW, Block

Cells = list[tuple[str, int]]  # (text, columns spanned) of each cell of a row


def column_labels(header_rows: list[Cells]) -> list[str]:
    """The label of each column: the header rows' texts, a merged cell's for each column it spans."""
    labels: list[str] = []
    for cells in header_rows:
        row_labels = [text for text, span in cells for _ in range(span)]
        if len(labels) == len(row_labels):
            labels = [f"{a} {b}" if a and b and a != b else a or b for a, b in zip(labels, row_labels, strict=True)]
        else:
            labels = row_labels
    return labels


def row_blocks(header_rows: list[Cells], body: list[Cells]) -> list[Block]:
    """The rows of ``body`` as blocks, labelled by ``header_rows`` (a table of header rows only is read as rows)."""
    labels = column_labels(header_rows)
    if not body:
        body, labels = header_rows, []
    blocks = []
    for cells in body:
        said: list[str] = []
        column = 0
        for text, span in cells:
            label = labels[column] if column < len(labels) else ""
            column += span
            if text:
                said.append(f"{label}: {text}" if label and label != text else text)
        if said:
            separator = "; " if labels or any("," in c for c in said) else ", "
            blocks.append(Block(separator.join(said), kind=TABLE_ROW))
    return blocks
