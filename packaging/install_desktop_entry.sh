#!/usr/bin/env bash
# Adds LocalQwen to the Linux desktop menu for the current user: installs assets/localqwen.desktop
# (Exec and Icon pointing at the built folder) and the icon, per the freedesktop.org specs.
#   packaging/install_desktop_entry.sh [path/to/dist/localqwen]     (default: dist/localqwen)
#   packaging/install_desktop_entry.sh --uninstall
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
ENTRY="$DATA/applications/localqwen.desktop"
ICON="$DATA/icons/hicolor/256x256/apps/localqwen.png"

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$ENTRY" "$ICON"
  echo "removed $ENTRY and $ICON"
  exit 0
fi
APP_DIR="$(cd "${1:-$ROOT/dist/localqwen}" 2>/dev/null && pwd)" || { echo "error: no built app folder at ${1:-$ROOT/dist/localqwen}; run \`make desktop\` first" >&2; exit 2; }
APP="$APP_DIR/localqwen"
[ -x "$APP" ] || { echo "error: $APP is not an executable; run \`make desktop\` first" >&2; exit 2; }

mkdir -p "$(dirname "$ENTRY")" "$(dirname "$ICON")"
cp "$ROOT/assets/localqwen.png" "$ICON"
# Paths with spaces must be quoted in Exec (Desktop Entry spec, "The Exec key").
sed -e "s|^Exec=localqwen --desktop|Exec=\"$APP\" --desktop|" \
    -e "s|^TryExec=localqwen|TryExec=$APP|" \
    -e "s|^Exec=x-terminal-emulator -e localqwen tui|Exec=x-terminal-emulator -e \"$APP\" tui|" \
    -e "s|^Icon=localqwen|Icon=$ICON|" \
    "$ROOT/assets/localqwen.desktop" > "$ENTRY"
chmod 644 "$ENTRY"
command -v update-desktop-database >/dev/null && update-desktop-database -q "$DATA/applications" || true
echo "installed $ENTRY (runs $APP --desktop) and $ICON"
