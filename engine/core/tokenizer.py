"""The text tokenizer of a model directory and the chat-style wrappers the prompts are built from.

Text to speak is wrapped as ``<|im_start|>assistant\\n{text}<|im_end|>\\n<|im_start|>assistant\\n``
(ids[:3] are the role prefix, ids[3:-5] the text); a reference transcript as
``<|im_start|>assistant\\n{text}<|im_end|>\\n``; an instruction as ``<|im_start|>user\\n{x}<|im_end|>\\n``.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import CheckpointError


class TextTokenizer:
    def __init__(self, model_dir: str | Path):
        try:
            from transformers import AutoTokenizer
            from transformers.utils import logging as hf_logging

            # transformers reads the model's config.json on the way and warns that it does not know
            # qwen3_tts; the tokenizer itself is a plain Qwen2 one, so that warning is noise
            verbosity = hf_logging.get_verbosity()
            hf_logging.set_verbosity_error()
            try:
                # the official processor loads with the corrected pre-tokenizer regex; so do we
                self._tok = AutoTokenizer.from_pretrained(str(model_dir), fix_mistral_regex=True)
            finally:
                hf_logging.set_verbosity(verbosity)
        except (OSError, ValueError) as e:
            raise CheckpointError(f"cannot load the text tokenizer from {model_dir}: {e}") from None

    def encode(self, s: str) -> list[int]:
        return list(self._tok(s, add_special_tokens=False)["input_ids"])

    def speech_ids(self, text: str) -> list[int]:
        """Role prefix (3 ids), the text, then 5 closing ids."""
        return self.speech_ids_many([text])[0]

    def speech_ids_many(self, texts: list[str]) -> list[list[int]]:
        """``speech_ids`` of each text, in one call of the tokenizer (its Rust side encodes a batch on several
        threads, without the GIL)."""
        if not texts:
            return []
        wrapped = [f"<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n" for text in texts]
        return [list(ids) for ids in self._tok(wrapped, add_special_tokens=False)["input_ids"]]

    def reference_text_ids(self, text: str) -> list[int]:
        """The transcript of a cloning reference, without its 3-id prefix and 2-id suffix."""
        return self.encode(f"<|im_start|>assistant\n{text}<|im_end|>\n")[3:-2]

    def instruct_ids(self, instruct: str) -> list[int]:
        return self.encode(f"<|im_start|>user\n{instruct}<|im_end|>\n")
