#!/usr/bin/env bash
# Installs what building chatmill needs beyond the Rust toolchain itself.
# Idempotent; safe to run every time.
set -euo pipefail
cd "$(dirname "$0")/.."
# RUSTUP_AUTO_INSTALL=0 machines never fetch targets implicitly.
if command -v rustup >/dev/null 2>&1; then
  rustup target add wasm32-wasip2 >/dev/null
fi
