#!/usr/bin/env bash
# Search latency through `chatmill mcp` (stdio, the official Python SDK as
# the client: 200 calls) against the CLI's `chatmill search` (a process per
# call: 40 runs), on the same root in the same minutes. Prints p50/p99.
# Needs a release build and scripts/setup-mcp.sh. Usage: bench-mcp.sh ROOT
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="${1:?usage: scripts/bench-mcp.sh ROOT (an imported root, e.g. 100k synthetic chunks)}"
bin="$here/target/release/chatmill"
py="${XDG_CACHE_HOME:-$HOME/.cache}/chatmill/mcp-venv/bin/python"
query="how do I fix the nginx 502 errors"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
python3 - "$bin" "$root" "$query" <<'P' | "$py" "$here/tests/mcp/client.py" > "$out"
import json, os, sys
bin, root, query = sys.argv[1:4]
env = {k: v for k, v in os.environ.items() if k.startswith("CHATMILL_")}
json.dump({"command": [bin, "--root", root, "mcp"], "env": env,
           "repeat": {"tool": "search", "arguments": {"query": query, "k": 10}, "times": 200}},
          sys.stdout)
P
python3 - "$out" <<'P'
import json, statistics, sys
ms = json.load(open(sys.argv[1]))["latency_ms"]
s = sorted(ms)
print(f"mcp search (stdio, client round trip): n={len(ms)} first={ms[0]:.1f} ms "
      f"p50={statistics.median(ms):.2f} ms p99={s[int(len(s) * 0.99) - 1]:.2f} ms")
P
for _ in $(seq 1 40); do
  start=$(date +%s.%N)
  "$bin" --root "$root" search "$query" -k 10 --json >/dev/null 2>&1
  echo "$start $(date +%s.%N)"
done | python3 -c '
import statistics, sys
v = sorted((float(b) - float(a)) * 1000 for a, b in (l.split() for l in sys.stdin))
print(f"cli search (a process per call): n={len(v)} p50={statistics.median(v):.1f} ms p99={v[-1]:.1f} ms")'
