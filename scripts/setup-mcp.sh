#!/usr/bin/env bash
# Installs the official MCP Python SDK (pinned) into a venv under
# ${XDG_CACHE_HOME:-~/.cache}/chatmill/mcp-venv: the real MCP client the
# tests drive `chatmill mcp` with (tests/mcp/client.py). Idempotent. Prints
# nothing on success.
set -euo pipefail
VERSION=2.3.0
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/chatmill/mcp-venv"
STAMP="$VENV/.mcp-$VERSION"
if [ -f "$STAMP" ] && [ -x "$VENV/bin/python" ]; then
  exit 0
fi
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "mcp==$VERSION"
"$VENV/bin/python" -c "import mcp.client.stdio"
touch "$STAMP"
