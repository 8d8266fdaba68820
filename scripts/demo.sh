#!/usr/bin/env bash
# The main job on the embedded defaults: build chatmill, list its adapters,
# and parse the example exports to normalized JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked -p chatmill
bin=target/release/chatmill
"$bin" adapters list
"$bin" parse examples/exports
