"""What a block of a document is, as its format's markup says: the kinds the document readers give their blocks
(``engine.documents``) and the reading policy decides by (``engine.core.text.reading_policy``). Qt-free, no imports.

PARAGRAPH is a paragraph of a format that says no more (plain text, PDF): the policy guesses code, sessions and
diagrams from its lines. Every other kind is what the markup said, so the policy decides by it and guesses nothing.
"""

PARAGRAPH = "paragraph"
PROSE = "prose"  # a paragraph the markup marks as text (<p>, a Normal style)
HEADING = "heading"
CODE = "code"  # <pre>, a fenced block, a code style
SESSION = "session"  # a code block whose first line is a prompt: a shell or interpreter transcript
TABLE_ROW = "table-row"  # one row, its cells labelled with their column headers ("Name: Alice; Age: 30")
FORMULA = "formula"  # <math display="block">, a formula object
DIAGRAM = "diagram"  # a code block drawn with box-drawing characters
FOOTNOTE = "footnote"  # a note's text, placed after the paragraph that refers to it
LIST_ITEM = "list-item"  # <li>, a list style
DEFINITION = "definition"  # a term or its definition (<dt>, <dd>)
KINDS = frozenset({PARAGRAPH, PROSE, HEADING, CODE, SESSION, TABLE_ROW, FORMULA, DIAGRAM, FOOTNOTE, LIST_ITEM,
                   DEFINITION})
ANNOUNCED = frozenset({CODE, SESSION, FORMULA, DIAGRAM})  # said as a word unless the policy reads code
