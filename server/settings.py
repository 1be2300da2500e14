"""Server settings: where it listens, the optional API key, and the limits that keep it healthy."""

from __future__ import annotations

from dataclasses import dataclass

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None  # when set, every /v1 request needs ``Authorization: Bearer <key>``
    model_name: str = "orator"  # the id /v1/models lists (any ``model`` value is accepted)
    max_input_chars: int = 4096
    max_instructions_chars: int = 4096
    max_upload_bytes: int = 20 * 1024 * 1024
    max_voices: int = 1000  # voices the library may hold; creating more answers 507
    max_queue: int = 64  # requests waiting for a generation slot; more answer 429
    retry_after_s: int = 2  # the Retry-After of a 429
    default_chunk_frames: int = 4
    max_chunk_frames: int = 64

    def __post_init__(self):
        for name in ("max_input_chars", "max_upload_bytes", "max_queue", "default_chunk_frames"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")
