#!/usr/bin/env bash
# Builds the one-folder Linux app dist/Orator/ with PyInstaller (packaging/orator.spec), then puts
# the desktop entry and the icon beside the executable. Run it from any folder; it uses the active
# Python environment (or .venv) and installs PyInstaller there when missing.
# Usage: bash packaging/build.sh        Install for the current user afterwards:
#   cp -r dist/Orator ~/.local/opt/ && ln -s ~/.local/opt/Orator/orator ~/.local/bin/orator
#   cp dist/Orator/orator.desktop ~/.local/share/applications/
#   cp dist/Orator/orator.png ~/.local/share/icons/hicolor/256x256/apps/
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ -z "${VIRTUAL_ENV:-}" ] && [ -x .venv/bin/python ]; then
    # shellcheck disable=SC1091
    . .venv/bin/activate
fi
python -c 'import PyInstaller' 2>/dev/null || python -m pip install "pyinstaller>=6.10"

started=$(date +%s)
python -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$ROOT/dist" --workpath "$ROOT/build/pyinstaller" packaging/orator.spec
cp packaging/orator.desktop resources/orator.png dist/Orator/
echo "Built dist/Orator in $(( $(date +%s) - started )) s ($(du -sh dist/Orator | cut -f1))"
