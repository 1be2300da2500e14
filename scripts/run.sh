#!/usr/bin/env bash
# Sets up Orator on a Debian machine (system libraries, .venv, the project with its GUI extras)
# and starts the desktop app. Usage: bash scripts/run.sh [app arguments]
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

install_apt_packages "${RUNTIME_APT_PACKAGES[@]}"
activate_venv
ensure_torch
install_project gui
cd "$ORATOR_ROOT"
exec python main.py "$@"
