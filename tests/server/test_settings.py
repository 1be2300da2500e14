"""``is_loopback`` against hostile host names, and ``check_model``'s accepted names."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.errors import APIError
from server.settings import OPENAI_MODEL_ALIASES, ServerSettings, check_model, is_loopback

LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
DOMAIN = st.lists(LABEL, min_size=1, max_size=4).map(".".join)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


@given(st.ip_addresses(v=4, network="127.0.0.0/8"))
def test_every_ipv4_loopback_address_is_loopback(address):
    assert is_loopback(str(address))


@given(st.ip_addresses().filter(lambda a: not a.is_loopback and not getattr(a, "ipv4_mapped", None)))
def test_other_addresses_are_not_loopback(address):
    assert not is_loopback(str(address))


@given(DOMAIN.filter(lambda d: not _is_ip("127." + d)))
def test_names_that_start_like_a_loopback_address_are_not_loopback(rest):
    """``127.evil.com``, ``127.0.0.1.nip.io``: names a resolver may send anywhere."""
    assert not is_loopback("127." + rest)
    assert not is_loopback("127.0.0.1." + rest)
    assert not is_loopback("localhost." + rest)


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]",
                                  "::ffff:127.0.0.1"])
def test_loopback_names(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["127.evil.com", "127.0.0.1.evil.com", "localhost.evil.com", "0.0.0.0", "::",
                                  "", "127.0.0.1:8000", "localhost:8000", "evil-localhost"])
def test_not_loopback_names(host):
    assert not is_loopback(host)


def test_check_model_takes_the_server_model_and_the_openai_names():
    settings = ServerSettings(model_name="orator")
    for name in ("orator", *OPENAI_MODEL_ALIASES):
        assert check_model(name, settings) == name
    for name in ("gpt-4o", "whisper-1", "Orator", "", "tts-1 "):
        with pytest.raises(APIError) as raised:
            check_model(name, settings)
        assert (raised.value.status, raised.value.param, raised.value.code) == (400, "model", "model_not_found")
