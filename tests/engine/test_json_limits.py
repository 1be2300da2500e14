"""The bounded JSON reader: documents within the limits read as ``json`` reads them, deeper or larger ones are a
``JSONLimitError`` (a ``json.JSONDecodeError``), never a ``RecursionError``, whatever their shape."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.json_limits import MAX_DEPTH, JSONLimitError, load_file, loads, nesting_depth

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                     st.text(alphabet=st.sampled_from('[]{}"\\ab,:'), max_size=8), st.text(max_size=8))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=4), inner, max_size=4)),
                       max_leaves=40)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@settings(max_examples=200, deadline=None)
@given(value=_values, indent=st.sampled_from([None, 1]))
def test_documents_within_the_limits_read_as_json_reads_them(value, indent):
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    assert nesting_depth(text) == _depth(value)  # brackets inside strings, escaped quotes included, do not count
    assert loads(text) == json.loads(text)
    assert loads(text.encode("utf-8")) == json.loads(text)


@settings(max_examples=60, deadline=None)
@given(depth=st.integers(MAX_DEPTH + 1, 200_000), opener=st.sampled_from(['[', '{"a":', '[{"b":[', '["]",']),
       closed=st.booleans())
def test_deeper_documents_are_refused_without_recursion(depth, opener, closed):
    closer = {"[": "]", '{"a":': "}", '[{"b":[': "]}]", '["]",': "]"}[opener]
    text = opener * depth + ("0" + closer * depth if closed else "")
    with pytest.raises(json.JSONDecodeError, match=f"nested {depth * opener.count('[') + depth * opener.count('{')}"
                                                   f" levels deep; at most {MAX_DEPTH}"):
        loads(text, max_bytes=len(text))


def test_the_exact_limit_is_read_and_the_size_is_bounded(tmp_path):
    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert _depth(loads(deepest)) == MAX_DEPTH
    with pytest.raises(JSONLimitError, match="more than 10"):
        loads(" " * 11, max_bytes=10)
    with pytest.raises(JSONLimitError, match="11 bytes, more than 10"):
        loads(b" " * 11, max_bytes=10)
    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b"0," * 100_000 + b"0]")
    with pytest.raises(JSONLimitError, match="more than 1000"):
        load_file(path, max_bytes=1000)
    assert len(load_file(path)) == 100_001
    with pytest.raises(json.JSONDecodeError):
        loads("{nope")
    assert isinstance(JSONLimitError("x"), ValueError) and str(JSONLimitError("x")) == "x"
