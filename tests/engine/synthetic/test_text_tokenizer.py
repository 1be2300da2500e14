"""The synthetic text tokenizer loads as a Qwen2 tokenizer with the official special ids."""

import json

import pytest
from transformers import AutoTokenizer

from engine.synthetic.text_tokenizer import write_text_tokenizer

TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer_config.json", "preprocessor_config.json")
TEXT_EMBEDDING_ROWS = 151936


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("text_tokenizer")
    write_text_tokenizer(out_dir)
    return out_dir


@pytest.fixture(scope="module")
def tokenizer(tokenizer_dir):
    return AutoTokenizer.from_pretrained(tokenizer_dir)


def test_chat_wrapping_uses_the_official_ids(tokenizer):
    ids = tokenizer("<|im_start|>assistant\nHello world.<|im_end|>\n<|im_start|>assistant\n")["input_ids"]
    assert ids[:3] == [151644, 77091, 198]
    assert ids[-5:] == [151645, 198, 151644, 77091, 198]
    text_ids = ids[3:-5]
    assert 0 < len(text_ids) < len("Hello world.")  # merges were learned
    assert tokenizer.decode(text_ids) == "Hello world."


@pytest.mark.parametrize(
    ("token", "token_id"),
    [
        ("<|endoftext|>", 151643),
        ("<|im_start|>", 151644),
        ("<|im_end|>", 151645),
        ("<tts_pad>", 151671),
        ("<tts_text_bos>", 151672),
        ("<tts_text_eod>", 151673),
        ("<tts_text_bos_single>", 151674),
    ],
)
def test_special_tokens_encode_to_their_official_ids(tokenizer, token, token_id):
    assert tokenizer(token)["input_ids"] == [token_id]
    assert tokenizer.decode([token_id]) == token


def test_all_ids_fit_the_text_embedding(tokenizer):
    assert max(tokenizer.get_vocab().values()) < TEXT_EMBEDDING_ROWS


@pytest.mark.parametrize(
    "text",
    [
        "你好，世界。今天我们来测试一下语音合成。",
        "こんにちは、世界。明日は晴れるでしょう。",
        "안녕하세요, 세계.",
        "Grüß Gott! Ça va? 🙂",
    ],
)
def test_multilingual_text_round_trips(tokenizer, text):
    ids = tokenizer(text)["input_ids"]
    assert all(token_id < 151643 for token_id in ids)
    assert tokenizer.decode(ids) == text


def test_newline_and_role_word_are_single_tokens(tokenizer):
    assert tokenizer("\n")["input_ids"] == [198]
    assert tokenizer("assistant")["input_ids"] == [77091]


def test_config_declares_the_special_tokens(tokenizer_dir):
    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    decoder = config["added_tokens_decoder"]
    assert decoder["151671"]["content"] == "<tts_pad>"
    assert decoder["151644"]["special"] is True
    assert config["tokenizer_class"] == "Qwen2Tokenizer"


def test_files_are_byte_identical_across_runs(tokenizer_dir, tmp_path):
    write_text_tokenizer(tmp_path)
    for name in TOKENIZER_FILES:
        assert (tmp_path / name).read_bytes() == (tokenizer_dir / name).read_bytes(), name
