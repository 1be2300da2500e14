# Shared setup steps of scripts/run.sh and scripts/test.sh. Source it; do not run it.
#
# Environment knobs: ORATOR_VENV (default .venv in the repository), PYTHON (the interpreter
# that creates the venv, default python3), TORCH_VERSION (installed only when the venv has no
# torch yet, default 2.13.0).

ORATOR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_DIR="${ORATOR_VENV:-$ORATOR_ROOT/.venv}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"

# What the app needs at run time: Python venvs, audio I/O, Qt 6 (offscreen and its X11 plugin).
RUNTIME_APT_PACKAGES=(
    python3 python3-venv
    libsndfile1 libportaudio2
    libegl1 libgl1 libxkbcommon0 libfontconfig1 libfreetype6 libdbus-1-3 libglib2.0-0
    libx11-xcb1 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1
    libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb-xkb1
)

log() { printf '\n==> %s\n' "$*" >&2; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }

# Installs the given Debian packages that are missing: directly as root, else through sudo.
install_apt_packages() {
    if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
        warn "not a Debian system: make sure these are installed: $*"
        return 0
    fi
    local missing=() package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed' || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local as_root=()
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null; then
            warn "not root and no sudo: install these Debian packages yourself: ${missing[*]}"
            return 0
        fi
        as_root=(sudo)
    fi
    log "Installing Debian packages: ${missing[*]}"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Creates the venv when missing and activates it.
activate_venv() {
    if [ ! -x "$VENV_DIR/bin/python" ]; then
        log "Creating the virtual environment $VENV_DIR"
        "${PYTHON:-python3}" -m venv "$VENV_DIR"
    fi
    # shellcheck disable=SC1091
    . "$VENV_DIR/bin/activate"
}

# Installs torch first when the venv has none, so the project's torch>=2.5.1 does not pull the
# newest release (on this project's machines pip finds the CPU build of 2.13.0 on local disk).
# On Linux without an NVIDIA GPU it adds PyTorch's CPU wheel index when that answers: PyPI's Linux torch is the
# CUDA build (~2.5 GB with its libraries), the CPU one ~200 MB; the same version's "+cpu" build then wins.
CPU_TORCH_INDEX="${ORATOR_CPU_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
ensure_torch() {
    python -c 'import torch' 2>/dev/null && return 0
    local extra=()
    if wants_cpu_torch && command -v curl >/dev/null 2>&1 \
        && curl -fsS -m 5 -o /dev/null "$CPU_TORCH_INDEX/torch/" 2>/dev/null; then
        extra=(--extra-index-url "$CPU_TORCH_INDEX")
    fi
    log "Installing torch==$TORCH_VERSION${extra[*]:+ (the CPU build, from $CPU_TORCH_INDEX)}"
    python -m pip install "torch==$TORCH_VERSION" "${extra[@]}"
}

# True on Linux with no NVIDIA driver (no nvidia-smi): where PyPI's torch would bring CUDA for nothing.
wants_cpu_torch() {
    [ "$(uname -s)" = Linux ] && ! command -v nvidia-smi >/dev/null 2>&1
}

# Installs the project in editable mode with the given extras, unless pyproject.toml is unchanged
# since the last install of the same extras into this venv.
install_project() {
    local extras="$1"
    local stamp="$VENV_DIR/.orator-installed-${extras//,/-}"
    local digest
    digest="$(sha256sum "$ORATOR_ROOT/pyproject.toml" | cut -d' ' -f1)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
        return 0
    fi
    log "Installing Orator with extras [$extras]"
    python -m pip install -e "$ORATOR_ROOT[$extras]"
    echo "$digest" >"$stamp"
}
