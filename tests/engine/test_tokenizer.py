"""The text tokenizer loads from a model folder quietly and leaves transformers' log level as it was; a batch of
texts gets the ids each gets alone."""

from __future__ import annotations

import subprocess
import sys

from transformers.utils import logging as hf_logging

from engine.core.tokenizer import TextTokenizer


def test_loading_from_a_model_folder_prints_no_warning(tiny_model_dir):
    """In a fresh process (transformers warns once per process): config.json's qwen3_tts model type is
    not transformers' concern, and its warning about it must not reach the user."""
    folder = str(tiny_model_dir("custom_voice"))
    code = f"from engine.core.tokenizer import TextTokenizer; print(TextTokenizer({folder!r}).encode('hi'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().startswith("[")
    assert "model of type" not in done.stderr, done.stderr


def test_loading_restores_the_log_level(tiny_model_dir):
    hf_logging.set_verbosity_warning()
    assert TextTokenizer(tiny_model_dir("custom_voice")).encode("hello")
    assert hf_logging.get_verbosity() == hf_logging.WARNING


def test_a_batch_of_texts_gets_the_ids_each_text_gets_alone(tiny_model_dir):
    tok = TextTokenizer(tiny_model_dir("custom_voice"))
    texts = ["Hi.", "A longer sentence, with punctuation; and more!", "你好，世界。", "x", "  spaced  out  "]
    batch = tok.speech_ids_many(texts)
    wrapped = [tok.encode(f"<|im_start|>assistant\n{t}<|im_end|>\n<|im_start|>assistant\n") for t in texts]
    assert batch == wrapped and [len(ids) for ids in batch] == [len(ids) for ids in wrapped]
    assert tok.speech_ids(texts[1]) == wrapped[1] and tok.speech_ids_many([]) == []
