#!/usr/bin/env bash
# The whole test suite (unit, adapter corpus, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --release --locked --workspace "$@"
