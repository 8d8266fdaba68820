#!/usr/bin/env bash
# Installs Debian's Chromium: the real headless browser `tests/e2e/report.rs`
# opens `chatmill report --html`'s page in (browser downloads by test
# frameworks do not work here; the distribution's package does).
# Idempotent. Prints nothing on success.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
