# A PulseAudio server with a null sink as the default output, so tests can open and play a real
# audio stream on machines without a sound card (CI, containers). Source it; do not run it.
#
# start_test_audio_server reuses a running server when one answers, else starts a per-user
# daemon (also as root, where PulseAudio only warns), then makes the sink "orator_null" the
# default. It exports PULSE_SERVER so every client, PortAudio's ALSA "pulse" device included,
# reaches that server. Tests that need sound skip when no server answers.

TEST_AUDIO_SINK="orator_null"

start_test_audio_server() {
    if ! command -v pulseaudio >/dev/null || ! command -v pactl >/dev/null; then
        warn "pulseaudio/pactl not installed: tests that play sound will skip"
        return 0
    fi
    export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/orator-runtime-$(id -u)}"
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
    if ! pactl info >/dev/null 2>&1; then
        log "Starting a PulseAudio daemon with a null sink"
        pulseaudio --daemonize=yes --exit-idle-time=-1 --system=false --disallow-exit -n \
            --load="module-native-protocol-unix auth-anonymous=1" \
            --load="module-null-sink sink_name=$TEST_AUDIO_SINK" \
            --log-target=stderr 2>/dev/null || warn "pulseaudio did not start"
        local attempt
        for attempt in $(seq 50); do
            pactl info >/dev/null 2>&1 && break
            sleep 0.1
        done
    fi
    local server
    server="$(pactl info 2>/dev/null | sed -n 's/^Server String: //p')"
    if [ -z "$server" ]; then
        warn "no PulseAudio server answers: tests that play sound will skip"
        return 0
    fi
    case "$server" in /*) server="unix:$server" ;; esac
    export PULSE_SERVER="$server"
    if ! pactl list short sinks | cut -f2 | grep -qx "$TEST_AUDIO_SINK"; then
        pactl load-module module-null-sink "sink_name=$TEST_AUDIO_SINK" >/dev/null
    fi
    pactl set-default-sink "$TEST_AUDIO_SINK"
    log "PulseAudio at $PULSE_SERVER, default sink $TEST_AUDIO_SINK"
}
