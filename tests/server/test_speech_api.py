"""``POST /v1/audio/speech`` through the official ``openai`` client against a live server (tiny model)."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.plans import PRECISIONS
from tests.server.helpers import RATE, SAMPLES_PER_FRAME, decode, engine_pcm, pcm_close, sse_audio, sse_events

FRAMES = 3
SHORT = {"max_frames": FRAMES, "seed": 7}
MP3_PADDING = 2 * 1152
AAC_PADDING = 2 * 1024  # ADTS has no field for the encoder's delay or the last frame's padding


@pytest.mark.parametrize("precision", PRECISIONS)
def test_non_streaming_pcm_equals_what_the_engine_gives_alone(start_server, plan_engine, precision):
    """On every plan: the server adds nothing to what its engine speaks."""
    from openai import OpenAI

    live = start_server(plan_engine(precision))
    client = OpenAI(base_url=f"{live.url}/v1", api_key="unused", max_retries=0, timeout=120)
    audio = client.audio.speech.create(model="orator", voice="vivian", input="Hello there.", response_format="pcm",
                                       extra_body=SHORT)
    expected = engine_pcm(live.engine, "Hello there.", "vivian", seed=7, max_frames=FRAMES)
    assert live.engine.execution_plan.precision == precision
    assert len(audio.content) == 2 * FRAMES * SAMPLES_PER_FRAME
    assert pcm_close(audio.content, expected)


@pytest.mark.parametrize("response_format", ["wav", "pcm", "flac", "mp3", "opus", "aac"])
def test_every_supported_format_decodes_to_the_generated_duration(client, response_format):
    audio = client.audio.speech.create(model="orator", voice="ryan", input="One two.",
                                       response_format=response_format, extra_body=SHORT)
    samples, rate = decode(response_format, audio.content)
    expected = FRAMES * SAMPLES_PER_FRAME
    assert rate == RATE
    assert expected <= len(samples) <= expected + {"mp3": MP3_PADDING, "aac": AAC_PADDING}.get(response_format, 0)


def test_aac_is_sent_as_adts_while_it_is_made(client):
    with client.audio.speech.with_streaming_response.create(
            model="orator", voice="vivian", input="Streaming now.", response_format="aac",
            extra_body={"max_frames": 6, "seed": 3, "chunk_frames": 1}) as r:
        assert r.headers["content-type"] == "audio/aac"
        pieces = [p for p in r.iter_bytes(chunk_size=None) if p]
    data = b"".join(pieces)
    assert len(pieces) > 1 and data[0] == 0xFF and data[1] & 0xF6 == 0xF0  # an ADTS sync word, layer 0
    samples, rate = decode("aac", data)
    assert rate == RATE and 6 * SAMPLES_PER_FRAME <= len(samples) <= 6 * SAMPLES_PER_FRAME + AAC_PADDING


def test_streaming_response_arrives_in_pieces_and_matches_the_whole(client):
    body = {"max_frames": 6, "seed": 3, "chunk_frames": 1}
    with client.audio.speech.with_streaming_response.create(
            model="orator", voice="vivian", input="Streaming now.", response_format="pcm", extra_body=body) as r:
        assert r.headers["x-request-id"].startswith("speech-")
        pieces = list(r.iter_bytes(chunk_size=None))
    whole = client.audio.speech.create(model="orator", voice="vivian", input="Streaming now.",
                                       response_format="pcm", extra_body=body).content
    assert b"".join(pieces) == whole and len(whole) == 2 * 6 * SAMPLES_PER_FRAME


def test_sse_stream_has_deltas_then_done_with_usage_and_timing(client, live_server):
    with client.audio.speech.with_streaming_response.create(
            model="orator", voice="vivian", input="Events please.", response_format="pcm", stream_format="sse",
            extra_body=SHORT) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r.read().decode())
    assert {e["type"] for e in events[:-1]} <= {"speech.audio.delta", "speech.queue", "speech.warning"}
    # the tiny random model does not end by itself: its one segment is cut at the budget, and the client hears so
    # after the segment's audio
    [warning] = [e for e in events if e["type"] == "speech.warning"]
    assert warning["segment"] == 0 and f"frame budget ({FRAMES} frames" in warning["message"]
    assert events[-2] is warning
    done = events[-1]
    assert done["type"] == "speech.audio.done"
    assert done["usage"]["output_tokens"] == FRAMES
    assert done["usage"]["total_tokens"] == done["usage"]["input_tokens"] + FRAMES > FRAMES
    assert done["timing"]["time_to_first_audio"] > 0 and done["timing"]["rtf"] > 0
    assert pcm_close(sse_audio(events), engine_pcm(live_server.engine, "Events please.", "vivian", 7, FRAMES))


@pytest.mark.parametrize("speed", [0.5, 2.0])
def test_speed_changes_duration(client, speed):
    audio = client.audio.speech.create(model="orator", voice="vivian", input="Faster or slower.",
                                       response_format="wav", speed=speed, extra_body={"max_frames": 6, "seed": 1})
    samples, _ = decode("wav", audio.content)
    assert len(samples) == round(6 * SAMPLES_PER_FRAME / speed)


def test_status_endpoint_reports_a_finished_request(client, live_server):
    with client.audio.speech.with_streaming_response.create(
            model="orator", voice="vivian", input="Status.", response_format="pcm", extra_body=SHORT) as r:
        request_id = r.headers["x-request-id"]
        r.read()
    status = httpx.get(f"{live_server.url}/v1/audio/speech/{request_id}").json()
    assert status["state"] == "done" and status["frames"] == FRAMES and status["queue_position"] == 0
    [warning] = status["warnings"]
    assert warning["segment"] == 0 and "frame budget" in warning["message"]


@pytest.mark.parametrize("fields, param", [
    ({"input": ""}, "input"),
    ({"input": "   "}, "input"),
    ({"input": "x" * 10_000_000}, "input"),
    ({"voice": "nobody"}, "voice"),
    ({"voice": {"id": "../../etc/passwd"}}, "voice"),
    ({"response_format": "wma"}, "response_format"),
    ({"speed": 9.0}, "speed"),
    ({"seed": -1}, "seed"),
    ({"instructions": "whisper"}, "instructions"),  # the tiny 0.6B CustomVoice has no style instructions
    ({"language": "klingon"}, "voice"),
])
def test_bad_requests_answer_400_with_an_openai_error(client, live_server, fields, param):
    request = {"model": "orator", "voice": "vivian", "input": "Hi.", **fields}
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.speech.create(**{k: v for k, v in request.items() if k in ("model", "voice", "input",
                                                                                "response_format", "speed",
                                                                                "instructions")},
                                   extra_body={k: v for k, v in fields.items() if k in ("seed", "language")})
    error = caught.value.body
    assert error["type"] == "invalid_request_error" and error["param"] == param and error["message"]
    assert httpx.get(f"{live_server.url}/health").json()["status"] == "ok"


@pytest.mark.parametrize("content, content_type", [
    (b'{"input": "Hi", "voice": ', "application/json"),
    (b"[1, 2]", "application/json"),
    (b"input=Hi", "application/x-www-form-urlencoded"),
])
def test_malformed_bodies_answer_400_json(live_server, content, content_type):
    r = httpx.post(f"{live_server.url}/v1/audio/speech", content=content, headers={"content-type": content_type})
    assert r.status_code == 400 and set(r.json()["error"]) == {"message", "type", "param", "code"}


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/v1/nothing", 404), ("DELETE", "/v1/models", 405), ("GET", "/v1/audio/speech", 405),
    ("GET", "/v1/audio/speech/speech-999999", 404),
])
def test_unknown_routes_and_methods_answer_json_errors(live_server, method, path, status):
    r = httpx.request(method, f"{live_server.url}{path}")
    assert r.status_code == status and r.json()["error"]["message"]


def test_models_and_health(client, live_server):
    models = client.models.list().data
    assert [m.id for m in models] == ["orator"]
    health = httpx.get(f"{live_server.url}/health").json()
    assert health["status"] == "ok" and health["queue"]["capacity"] == 1
