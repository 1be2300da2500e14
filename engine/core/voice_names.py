"""When two voice names are the same voice (``name_key``) and how long a name may be (``MAX_NAME_CHARS``): the one
rule that the voice library's file names and the pronunciation rules' voice fields share."""

import re
import unicodedata

MAX_NAME_CHARS = 80
_SPACES = re.compile(r"\s+")


def name_key(name: str) -> str:
    """What two names must share to be the same voice: case, Unicode form and runs of spaces aside."""
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFD", name).casefold())
    return _SPACES.sub(" ", folded).strip()
