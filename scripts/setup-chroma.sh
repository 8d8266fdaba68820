#!/usr/bin/env bash
# Installs a ChromaDB server (the `chroma` CLI, pinned) into a venv under
# ${XDG_CACHE_HOME:-~/.cache}/chatmill/chroma, for the tests against a real
# server and for users who want the Chroma backend without a system install.
# Idempotent. Prints nothing on success.
set -euo pipefail
VERSION=1.5.9
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/chatmill/chroma"
STAMP="$VENV/.chromadb-$VERSION"
if [ -f "$STAMP" ] && [ -x "$VENV/bin/chroma" ]; then
  exit 0
fi
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "chromadb==$VERSION"
"$VENV/bin/chroma" --help >/dev/null
touch "$STAMP"
