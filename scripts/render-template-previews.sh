#!/usr/bin/env bash
# Regenerates the preview images of the built-in designs (assets/images/template-<slug>.png)
# from assets/templates/<slug>.html, with the ((placeholders)) filled by sample values.
# A design may have assets/templates/<slug>.preview.html instead (the blank "Custom" design,
# whose own HTML renders as an empty page).
#
# The PNGs are committed assets: nothing renders at run time. Run this after editing a design.
#
#   Needs: headless Chromium (Debian: `apt-get install -y chromium`; or set CHROMIUM=/path/to/chrome).
#   Usage: scripts/render-template-previews.sh [slug ...]     (default: every design)
#   Optional: optipng or pngquant on PATH shrinks the files further.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/assets/templates"
OUT="$ROOT/assets/images"
CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
WIDTH="${WIDTH:-640}"
HEIGHT="${HEIGHT:-1160}"

if [ -z "$CHROMIUM" ]; then
  echo "headless Chromium not found: apt-get install -y chromium, or set CHROMIUM" >&2
  exit 1
fi

if [ "$#" -gt 0 ]; then
  slugs=("$@")
else
  slugs=()
  for f in "$SRC"/*.html; do
    case "$f" in *.preview.html) continue ;; esac
    slugs+=("$(basename "$f" .html)")
  done
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for slug in "${slugs[@]}"; do
  src="$SRC/$slug.html"
  [ -f "$SRC/$slug.preview.html" ] && src="$SRC/$slug.preview.html"
  [ -f "$src" ] || { echo "no design $slug" >&2; exit 1; }

  page="$work/$slug.html"
  sed -e 's/((first_name))/Alex/g' \
      -e 's/((last_name))/Morgan/g' \
      -e 's/((email))/alex.morgan@example.com/g' \
      -e 's/((sender_name))/Northwind Studio/g' \
      -e 's/((sender_address))/120 Market Street, Springfield, OR 97477, USA/g' \
      -e 's/((unsubscribe_preferences))/#/g' \
      -e 's/(([a-z0-9_]*))//g' \
      "$src" > "$page"

  png="$OUT/template-$slug.png"
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --hide-scrollbars --force-device-scale-factor=1 \
    --window-size="$WIDTH,$HEIGHT" --screenshot="$png" "file://$page" >/dev/null 2>&1

  if command -v pngquant >/dev/null 2>&1; then
    pngquant --force --skip-if-larger --quality=80-95 --output "$png" "$png" || true
  elif command -v optipng >/dev/null 2>&1; then
    optipng -quiet -o2 "$png"
  fi
  echo "$png ($(wc -c < "$png") bytes)"
done
