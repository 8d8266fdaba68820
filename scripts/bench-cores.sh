#!/usr/bin/env bash
# The import across cores (#26): the same inputs imported with 1, 2, 4, 8 …
# cores (taskset), lexical embedder, fresh roots on tmpfs, alternating,
# for a folder of many Claude Code sessions and for one large ChatGPT
# export. Prints wall seconds per run and the speed-up over one core.
#   scripts/bench-cores.sh [SESSIONS] [PAIRS] [RUNS]
# (needs target/release/chatmill, or the binary CHATMILL_BIN names; core counts
# above the machine's are left out)
set -euo pipefail
cd "$(dirname "$0")/.."
sessions="${1:-300}" pairs="${2:-50000}" runs="${3:-3}"
bin="${CHATMILL_BIN:-target/release/chatmill}"
tmp=$(mktemp -d "${TMPDIR:-/dev/shm}/bench-cores.XXXX")
trap 'rm -rf "$tmp"' EXIT
cargo run -q --release -p chatmill-synth --example synth -- claude-code "$tmp/sessions" "$sessions"
cargo run -q --release -p chatmill-synth --example synth -- chatgpt "$tmp/export.json" "$pairs"
export CHATMILL_EMBEDDING=lexical CHATMILL_CONFIG="$tmp/none.toml" CHATMILL_CACHE_DIR="$tmp/cache"
: >"$tmp/none.toml"
have=$(nproc --all)
counts=""
for c in 1 2 4 8 16; do [ "$c" -le "$have" ] && counts="$counts $c"; done
for input in sessions export.json; do
  declare -A best=()
  for i in $(seq "$runs"); do
    for c in $counts; do
      rm -rf "$tmp/root"
      start=$(date +%s.%N)
      taskset -c "0-$((c - 1))" "$bin" --root "$tmp/root" import --json "$tmp/$input" >"$tmp/out.json"
      s=$(echo "$(date +%s.%N) - $start" | bc)
      chunks=$(python3 -c "import json;print(json.load(open('$tmp/out.json'))['chunks_total'])")
      echo "$input  cores $c  run $i  ${s}s  $chunks chunks"
      if [ -z "${best[$c]:-}" ] || [ "$(echo "$s < ${best[$c]}" | bc)" = 1 ]; then best[$c]=$s; fi
    done
  done
  for c in $counts; do
    echo "$input  cores $c  best ${best[$c]}s  speed-up $(echo "scale=2; ${best[1]} / ${best[$c]}" | bc)x"
  done
  unset best
done
