#!/usr/bin/env bash
# The main job on the embedded defaults: build chatmill, list its adapters,
# import the example exports (a ChatGPT export, a Claude Code session and a
# raw session log) into a fresh root — chunk files, manifest, embedded
# index — search them, verify, and send one live turn through the inline
# server. Set CHATMILL_ROOT to keep the result somewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-model.sh   # the local embedding model (all-MiniLM-L6-v2)
cargo build --release --locked -p chatmill
bin="$PWD/target/release/chatmill"
work="$(mktemp -d)"
root="${CHATMILL_ROOT:-$work/conversations}"
export CHATMILL_CONFIG="$work/config.toml"   # the defaults, whatever ~/.config holds
touch "$CHATMILL_CONFIG"

"$bin" adapters list
echo; echo "== import examples/exports into $root"
"$bin" --root "$root" import examples/exports
echo; echo "== search: sourdough"
"$bin" --root "$root" search "sourdough starter smell" -k 3
echo; echo "== verify"
"$bin" --root "$root" verify

echo; echo "== inline: serve, one turn, search it at once"
sock="$work/chatmill.sock"
"$bin" --root "$root" serve --socket "$sock" & server=$!
trap 'kill -TERM $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$bin" --root "$root" turn --socket "$sock" --session demo --turn 1 \
  --user "What is the fastest way to undo the last git commit but keep the changes?" \
  --assistant "git reset --soft HEAD~1 keeps the changes staged."
"$bin" --root "$root" search "undo last git commit" -k 1 --format context
