// Orator live page: speaks through POST /v1/audio/speech as server-sent events (24 kHz 16-bit pcm
// deltas), plays each delta with the Web Audio API as it arrives, and shows queue position, time
// to first audio and real-time factor. window.oratorStats exposes the figures of the last request.
"use strict";

const SAMPLE_RATE = 24000;
const $ = (id) => document.getElementById(id);
const stats = { samples: 0, ttfa: null, rtf: null, queue: null, done: false, error: null, id: null };
window.oratorStats = stats;
let audioContext = null;
let playAt = 0;
let controller = null;

function authHeaders() {
  const key = $("api-key").value.trim();
  localStorage.setItem("orator-api-key", key);
  return key ? { Authorization: `Bearer ${key}` } : {};
}

async function api(path, options = {}) {
  const response = await fetch(path, { ...options, headers: { ...authHeaders(), ...(options.headers || {}) } });
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new Error((body.error && body.error.message) || `${response.status} ${response.statusText}`);
  }
  return response;
}

function showMessage(text, isError = false) {
  $("message").textContent = text;
  $("message").classList.toggle("error", isError);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Until the model is ready (loading and warming up take minutes on a GPU the first time), show how far the
// server is, from /health, every second; true once ready, false if it failed to load.
async function waitForModel() {
  for (;;) {
    let health;
    try {
      health = await (await fetch("/health")).json();
    } catch (e) {
      $("model").textContent = `server not reachable: ${e.message}`;
      await sleep(2000);
      continue;
    }
    if (health.status === "ok") return true;
    if (health.status === "failed") {
      $("model").textContent = `the model failed to load: ${health.error}`;
      return false;
    }
    const loading = health.loading;
    const count = loading.total ? `${loading.done}/${loading.total}, ` : "";
    $("model").textContent = `${loading.stage} (${count}${Math.round(loading.elapsed_s)} s)`;
    await sleep(1000);
  }
}

async function loadModel() {
  try {
    const model = (await (await api("/v1/models")).json()).data[0];
    $("model").textContent = model.display_name;
    for (const language of model.languages.filter((l) => l !== "auto")) {
      $("language").add(new Option(language, language));
    }
  } catch (e) {
    $("model").textContent = `not ready: ${e.message}`;
  }
}

async function loadVoices(select) {
  const voices = (await (await api("/v1/audio/voices")).json()).data;
  const picker = $("voice");
  picker.innerHTML = "";
  for (const [source, title] of [["preset", "Presets"], ["library", "Library"]]) {
    const group = document.createElement("optgroup");
    group.label = title;
    for (const v of voices.filter((x) => x.source === source)) {
      const option = new Option(`${v.name}${source === "library" ? ` (${v.kind})` : ""}`, v.id);
      option.dataset.source = source;
      group.appendChild(option);
    }
    if (group.children.length) picker.appendChild(group);
  }
  if (select) picker.value = select;
}

function playPcm16(bytes) {
  const count = bytes.length >> 1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
  const samples = new Float32Array(count);
  for (let i = 0; i < count; i++) samples[i] = view.getInt16(2 * i, true) / 32768;
  stats.samples += count;
  $("stat-samples").textContent = stats.samples.toLocaleString();
  $("stat-audio").textContent = `${(stats.samples / SAMPLE_RATE).toFixed(2)} s`;
  if (!count) return;
  const buffer = audioContext.createBuffer(1, count, SAMPLE_RATE);
  buffer.copyToChannel(samples, 0);
  const source = audioContext.createBufferSource();
  source.buffer = buffer;
  source.connect(audioContext.destination);
  playAt = Math.max(playAt, audioContext.currentTime + 0.05);
  source.start(playAt);
  playAt += buffer.duration;
}

function base64Bytes(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function addHistoryRow(voice) {
  const row = $("history").tBodies[0].insertRow(0);
  row.innerHTML = "<td>…</td><td></td><td>–</td><td>–</td><td>–</td><td>–</td><td>queued</td>";
  row.cells[1].textContent = voice;
  return row;
}

function resetStats() {
  Object.assign(stats, { samples: 0, ttfa: null, rtf: null, queue: null, done: false, error: null, id: null });
  for (const id of ["stat-queue", "stat-ttfa", "stat-rtf", "stat-audio"]) $(id).textContent = "–";
  $("stat-samples").textContent = "0";
}

async function speak() {
  resetStats();
  audioContext = audioContext || new AudioContext({ sampleRate: SAMPLE_RATE });
  await audioContext.resume();
  playAt = 0;
  const voice = $("voice").value;
  const body = {
    model: "orator", input: $("text").value, voice, response_format: "pcm", stream_format: "sse",
    speed: Number($("speed").value),
  };
  if ($("language").value) body.language = $("language").value;
  if ($("instructions").value.trim()) body.instructions = $("instructions").value.trim();
  if ($("pronunciation").checked) body.pronunciation = true;
  const row = addHistoryRow(voice);
  const started = performance.now();
  controller = new AbortController();
  $("speak").disabled = true;
  $("stop").disabled = false;
  showMessage("speaking…");
  try {
    const response = await api("/v1/audio/speech", {
      method: "POST", body: JSON.stringify(body), signal: controller.signal,
      headers: { "Content-Type": "application/json" },
    });
    stats.id = response.headers.get("X-Request-Id");
    row.cells[0].textContent = stats.id;
    await readEvents(response, (event) => handleEvent(event, row, started));
    if (!stats.done && !stats.error) throw new Error("the stream ended early");
    showMessage(stats.error ? stats.error : "done", Boolean(stats.error));
  } catch (e) {
    const stopped = e.name === "AbortError";
    row.cells[6].textContent = stopped ? "stopped" : "failed";
    showMessage(stopped ? "stopped" : e.message, !stopped);
  } finally {
    $("speak").disabled = false;
    $("stop").disabled = true;
    controller = null;
  }
}

async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    let end;
    while ((end = pending.indexOf("\n\n")) >= 0) {
      const block = pending.slice(0, end);
      pending = pending.slice(end + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

function handleEvent(event, row, started) {
  if (event.type === "speech.queue") {
    stats.queue = event.position;
    $("stat-queue").textContent = `#${event.position}`;
    row.cells[2].textContent = `#${event.position}`;
  } else if (event.type === "speech.audio.delta") {
    if (stats.ttfa === null) {
      stats.ttfa = (performance.now() - started) / 1000;
      $("stat-ttfa").textContent = `${(stats.ttfa * 1000).toFixed(0)} ms`;
      $("stat-queue").textContent = "playing";
      row.cells[3].textContent = `${(stats.ttfa * 1000).toFixed(0)} ms`;
      row.cells[6].textContent = "playing";
    }
    playPcm16(base64Bytes(event.audio));
  } else if (event.type === "speech.audio.done") {
    stats.done = true;
    stats.rtf = event.timing.rtf ?? null;
    const rtf = stats.rtf === null ? "–" : stats.rtf.toFixed(3);
    $("stat-rtf").textContent = rtf;
    row.cells[4].textContent = rtf;
    row.cells[5].textContent = `${event.timing.audio_seconds.toFixed(2)} s`;
    row.cells[6].textContent = "done";
    $("stat-queue").textContent = "–";
  } else if (event.type === "error") {
    stats.error = event.error.message;
    row.cells[6].textContent = "failed";
  }
}

async function upload(event) {
  event.preventDefault();
  const form = new FormData(event.target);
  try {
    const voice = await (await api("/v1/audio/voices", { method: "POST", body: form })).json();
    showMessage(voice.note ? `saved “${voice.name}”: ${voice.note}` : `saved “${voice.name}”`);
    event.target.reset();
    await loadVoices(voice.id);
  } catch (e) {
    showMessage(e.message, true);
  }
}

$("speed").addEventListener("input", () => { $("speed-value").textContent = `${Number($("speed").value).toFixed(2)}×`; });
$("speak").addEventListener("click", speak);
$("stop").addEventListener("click", () => controller && controller.abort());
$("upload").addEventListener("submit", upload);
$("api-key").value = localStorage.getItem("orator-api-key") || "";
function loadModelAndVoices() {
  loadModel();
  loadVoices().catch((e) => showMessage(e.message, true));
}

$("api-key").addEventListener("change", loadModelAndVoices);
waitForModel().then((ready) => ready && loadModelAndVoices());
