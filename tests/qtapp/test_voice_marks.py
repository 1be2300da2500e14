"""``[voice: NAME]`` paragraph marks."""

from qtapp.voice_marks import Passage, parse_mark, split_passages


def spoken(text, passages):
    return [(text[p.start:p.end].strip(), p.voice) for p in passages]


def test_parse_mark():
    assert parse_mark("[voice: Alice] Hello") == ("Alice", len("[voice: Alice] "))
    assert parse_mark("[VOICE:bob the builder]") == ("bob the builder", len("[VOICE:bob the builder]"))
    assert parse_mark("Hello [voice: Alice]") == (None, 0)
    assert parse_mark("[voice: ] nothing") == (None, 0)


def test_marked_paragraphs_get_their_voice_and_unmarked_runs_the_default():
    text = "Once upon a time.\nThere was a fox.\n[voice: Fox] I am hungry!\n\nThe end.\n"
    passages = split_passages(text)
    assert spoken(text, passages) == [("Once upon a time.\nThere was a fox.", None), ("I am hungry!", "Fox"),
                                      ("The end.", None)]
    fox = passages[1]
    assert text[fox.start:fox.end] == "I am hungry!"  # the mark itself is not spoken


def test_mark_inside_a_line_is_text():
    text = "He said [voice: Fox] loudly."
    assert split_passages(text) == [Passage(0, len(text), None)]


def test_empty_marked_paragraph_is_dropped_and_range_is_respected():
    text = "[voice: A]\nFirst.\n[voice: B] Second.\nThird."
    assert spoken(text, split_passages(text)) == [("First.", None), ("Second.", "B"), ("Third.", None)]
    start = text.index("Second")
    assert spoken(text, split_passages(text, start, text.index("Third"))) == [("Second.", None)]
    b_line = text.index("[voice: B]")
    assert spoken(text, split_passages(text, b_line)) == [("Second.", "B"), ("Third.", None)]
