#!/usr/bin/env bash
# Sets up everything the tests need on a Debian machine (system packages, .venv, the project with
# its gui/server/ray/test extras, the official qwen-tts oracle, a PulseAudio null sink), then runs the
# CPU test suite, ruff and the import layers (lint-imports); on CI (CI=true) also builds the
# PyInstaller app and runs its self-test.
# Exits non-zero when anything fails.
# Usage: bash scripts/test.sh [pytest arguments]
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/test_audio_server.sh
. "$(dirname "${BASH_SOURCE[0]}")/test_audio_server.sh"

# The official implementation used as a test oracle (tests/oracle.py). Installed without its
# dependencies: it asks for torchaudio, which has no release beside torch 2.13.
OFFICIAL_PACKAGE="qwen-tts-hf==0.1.1.post1"

TEST_APT_PACKAGES=(
    "${RUNTIME_APT_PACKAGES[@]}"
    portaudio19-dev pulseaudio pulseaudio-utils libasound2-plugins sox
    chromium chromium-driver
)

install_oracle() {
    log "Installing the official $OFFICIAL_PACKAGE (no dependencies)"
    python -m pip install --no-deps "$OFFICIAL_PACKAGE"
}

install_apt_packages "${TEST_APT_PACKAGES[@]}"
activate_venv
ensure_torch
install_project gui,server,ray,test,oracle
install_oracle
start_test_audio_server

export QT_QPA_PLATFORM=offscreen
export HF_HUB_OFFLINE=1
cd "$ORATOR_ROOT"

status=0
log "pytest -m 'not gpu and not slow' $*"
python -m pytest -m "not gpu and not slow" "$@" || status=$?
log "pytest -m 'slow and not gpu' $*: the full-size checks"
python -m pytest -m "slow and not gpu" "$@" || { rc=$?; [ "$rc" -eq 5 ] || status=$rc; }  # 5: none selected
if [ "${CI:-}" = "true" ]; then
    # The installable app: build dist/Orator (about 4 minutes on 2 cores) and start it headless.
    log "bash packaging/build.sh, then the bundle's tests and --self-test"
    if bash packaging/build.sh; then
        ORATOR_BUILD_BUNDLE=1 python -m pytest tests/packaging || status=1
    else
        status=1
    fi
fi
log "ruff check ."
ruff check . || status=1
log "lint-imports: the layers of pyproject.toml's [tool.importlinter]"
lint-imports || status=1
exit "$status"
