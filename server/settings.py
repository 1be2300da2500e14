"""Server settings: where it listens, the optional API key, and the limits that keep it healthy."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line parses its arguments without the web stack (server.errors needs FastAPI)
    from engine.pronunciation import Lexicon

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
MAX_WS_MESSAGE_BYTES = 1 << 20  # a larger WebSocket message closes its connection (1009) before it is read whole
# OpenAI's speech model names, accepted as ``model`` so that OpenAI clients work unchanged
OPENAI_MODEL_ALIASES = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None  # when set, every /v1 request needs ``Authorization: Bearer <key>``
    model_name: str = "orator"  # the id /v1/models lists; ``model`` may be it or an OpenAI alias
    allowed_hosts: tuple[str, ...] = ()  # names the Host header may carry besides loopback names and ``host``
    max_input_chars: int = 4096
    max_instructions_chars: int = 4096
    max_upload_bytes: int = 20 * 1024 * 1024
    max_voices: int = 1000  # voices the library may hold; creating more answers 507
    max_queue: int = 64  # requests waiting for a generation slot; more answer 429
    retry_after_s: int = 2  # the Retry-After of a 429
    default_chunk_frames: int = 4
    max_audio_s: float = 900.0  # audio one request may produce; a longer one is stopped with an error
    max_unread_audio_s: float = 600.0  # audio generated ahead of what its client read; more stops the stream
    send_timeout_s: float = 60.0  # a client that takes no data for this long is disconnected
    header_timeout_s: float = 10.0  # a request head must be complete this long after connecting or a response
    keep_alive_s: float = 5.0  # an idle keep-alive connection is closed after this long (uvicorn's)
    max_connections: int = 512  # open connections; a connection beyond them is closed at once
    limit_concurrency: int = 256  # open connections or requests in progress beyond which a request answers 503
    pronunciation: Lexicon | None = None  # the rules a request asking for ``"pronunciation": true`` is spoken with
    pronunciation_budget_s: float = 2.0  # the time the rules may take over one request's text; past it, a 400
    max_live_chars: int = 100_000  # the text one live-text session (WebSocket) may send in all
    live_text_timeout_s: float = 30.0  # a live session that sends no message for this long, its text open, is closed
    stall_s: float = 30.0  # every slot this long without a frame while requests wait: /ready answers 503

    def __post_init__(self):
        for name in ("max_input_chars", "max_instructions_chars", "max_upload_bytes", "max_queue",
                     "default_chunk_frames", "max_audio_s", "max_unread_audio_s", "max_connections",
                     "limit_concurrency", "max_live_chars"):
            if not getattr(self, name) >= 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("header_timeout_s", "keep_alive_s", "send_timeout_s", "live_text_timeout_s", "stall_s",
                     "pronunciation_budget_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be more than 0 seconds")
        if self.limit_concurrency > self.max_connections:
            raise ValueError(f"limit_concurrency ({self.limit_concurrency}) cannot exceed max_connections "
                             f"({self.max_connections}): no more connections than that are ever open")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is "localhost" or a loopback IP address (127.0.0.0/8, ::1, an IPv4-mapped 127.x)."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def check_model(name: str, settings: ServerSettings) -> str:
    """``name`` if a speech request may ask for it (the server's model or an OpenAI alias), else a 400."""
    from server.errors import APIError

    if name == settings.model_name or name in OPENAI_MODEL_ALIASES:
        return name
    raise APIError(400, f"unknown model {name!r}; this server speaks with {settings.model_name!r} (also accepted: "
                        f"{', '.join(OPENAI_MODEL_ALIASES)})", param="model", code="model_not_found")
