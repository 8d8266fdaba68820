#!/usr/bin/env bash
# Two chatmill binaries on the same inputs, alternating (A, B, A, B …), so
# that this machine's drift hits both alike: a folder of many Claude Code
# sessions and one large ChatGPT export, imported into fresh roots on tmpfs
# with the lexical embedder, then a keyword and a hybrid search on the large
# root. Prints each run's wall seconds and each side's median, and whether
# both sides wrote the same chunk files (byte for byte).
#   scripts/bench-ab.sh BIN_A BIN_B [SESSIONS] [PAIRS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
a="${1:?usage: scripts/bench-ab.sh BIN_A BIN_B [SESSIONS] [PAIRS] [RUNS]}"
b="${2:?usage: scripts/bench-ab.sh BIN_A BIN_B [SESSIONS] [PAIRS] [RUNS]}"
sessions="${3:-3000}" pairs="${4:-100000}" runs="${5:-3}"
tmp=$(mktemp -d "${TMPDIR:-/dev/shm}/bench-ab.XXXX")
trap 'rm -rf "$tmp"' EXIT
cargo run -q --release -p chatmill-synth --example synth -- claude-code "$tmp/sessions" "$sessions"
cargo run -q --release -p chatmill-synth --example synth -- chatgpt "$tmp/export.json" "$pairs"
export CHATMILL_EMBEDDING=lexical CHATMILL_CONFIG="$tmp/none.toml" CHATMILL_CACHE_DIR="$tmp/cache"
: >"$tmp/none.toml"

# Wall seconds of one command.
timed() {
  local start
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  echo "$(date +%s.%N) - $start" | bc
}

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

for input in sessions export.json; do
  for side in a b; do : >"$tmp/times-$side"; done
  for i in $(seq "$runs"); do
    for side in a b; do
      bin=$a
      [ "$side" = b ] && bin=$b
      rm -rf "$tmp/root-$side"
      s=$(timed "$bin" --root "$tmp/root-$side" import "$tmp/$input")
      echo "$s" >>"$tmp/times-$side"
      echo "$input  $side  run $i  import ${s}s"
    done
  done
  echo "$input  import median: A $(median <"$tmp/times-a")s  B $(median <"$tmp/times-b")s"
  if diff -rq -x '.chatmill' -x '.processing-manifest.json' "$tmp/root-a" "$tmp/root-b" >/dev/null; then
    echo "$input  chunk files and notes: identical"
  else
    echo "$input  chunk files and notes: DIFFER"
  fi
done

# Searches on the large root (its index as each binary wrote it).
for mode in keyword hybrid; do
  for side in a b; do : >"$tmp/times-$side"; done
  for i in $(seq "$runs"); do
    for side in a b; do
      bin=$a
      [ "$side" = b ] && bin=$b
      s=$(timed "$bin" --root "$tmp/root-$side" search --mode "$mode" "how do I shard a table")
      echo "$s" >>"$tmp/times-$side"
    done
  done
  echo "search $mode median: A $(median <"$tmp/times-a")s  B $(median <"$tmp/times-b")s"
done
