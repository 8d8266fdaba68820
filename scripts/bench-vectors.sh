#!/usr/bin/env bash
# Import with vectors after words (#26): the same export imported with the
# lexical stand-in, with the real model and --no-wait (the keyword stage
# only), and with the real model waiting for its vectors, alternating,
# each into a fresh root on tmpfs. Prints seconds per run and the median
# ratio of --no-wait to lexical.
#   scripts/bench-vectors.sh EXPORT [RUNS]   (needs target/release/chatmill
#   and the model from scripts/setup-model.sh; EXPORT e.g. a ChatGPT
#   conversations.json)
set -euo pipefail
cd "$(dirname "$0")/.."
export_file="${1:?usage: scripts/bench-vectors.sh EXPORT [RUNS]}"
runs="${2:-3}"
bin=target/release/chatmill
tmp=$(mktemp -d "${TMPDIR:-/dev/shm}/bench-vectors.XXXX")
trap 'rm -rf "$tmp"' EXIT
cfg="$tmp/config.toml"
: >"$cfg"
time_import() { # mode -> seconds
  local root="$tmp/root" start end
  rm -rf "$root"
  start=$(date +%s.%N)
  case "$1" in
    lexical) CHATMILL_EMBEDDING=lexical "$bin" --root "$root" import --json "$export_file" >"$tmp/out.json" ;;
    no-wait) "$bin" --root "$root" import --no-wait --json "$export_file" >"$tmp/out.json" ;;
    wait) "$bin" --root "$root" import --json "$export_file" >"$tmp/out.json" ;;
  esac
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
export CHATMILL_CONFIG="$cfg" CHATMILL_CACHE_DIR="$tmp/cache"
modes="lexical no-wait"
[ -n "${WAIT:-}" ] && modes="$modes wait"
declare -A all
for i in $(seq "$runs"); do
  for m in $modes; do
    # A fresh embedding cache each time: nothing is answered from a
    # previous run's vectors.
    rm -rf "$tmp/cache"
    s=$(time_import "$m")
    chunks=$(python3 -c "import json;d=json.load(open('$tmp/out.json'));print(d['chunks_total'], d.get('vectors_pending'))")
    echo "run $i  $m  ${s}s  (chunks, vectors pending: $chunks)"
    all[$m]="${all[$m]:-} $s"
  done
done
python3 - "${all[lexical]}" "${all[no-wait]}" <<'PY'
import statistics, sys
lex = [float(x) for x in sys.argv[1].split()]
nw = [float(x) for x in sys.argv[2].split()]
print(f"median lexical {statistics.median(lex):.2f}s, no-wait {statistics.median(nw):.2f}s, ratio {statistics.median(nw)/statistics.median(lex):.2f}")
PY
