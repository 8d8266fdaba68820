#!/usr/bin/env bash
# The whole test suite (unit, adapter corpus, parity, end-to-end), then one
# closing line with the totals over every test binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# A real local LLM server for the header-model test (built once, cached).
bash scripts/setup-llm.sh
# The local embedding model and a real ChromaDB server (both cached).
bash scripts/setup-model.sh
bash scripts/setup-chroma.sh
# The pinned Python and JavaScript adapter toolchains (tests/e2e/author_kit.rs).
bash scripts/setup-authoring.sh
# The official MCP Python SDK, the real client of `chatmill mcp` (tests/e2e/mcp.rs).
bash scripts/setup-mcp.sh
# Debian's Chromium, the real browser `chatmill report --html`'s page is opened in (tests/e2e/report.rs).
bash scripts/setup-browser.sh
# The real model, the real servers and clients must be exercised, not skipped.
export CHATMILL_REQUIRE_MODEL=1 CHATMILL_REQUIRE_CHROMA=1 CHATMILL_REQUIRE_MCP=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --release --locked --workspace --lib --bins --tests "$@" 2>&1 | tee "$log" || status=$?
passed=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) passed.*/\1/' | awk '{s+=$1} END {print s+0}')
failed=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) failed.*/\1/' | awk '{s+=$1} END {print s+0}')
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  # A build failure or crash: no test result lines to count.
  failed=1
fi
# The adapter SDK must stay publishable on its own (it is vendored into new
# adapter projects meanwhile); --allow-dirty: the tree is shared while tests run.
if ! cargo publish --dry-run --locked --allow-dirty -p chatmill-adapter-sdk >"$log" 2>&1; then
  cat "$log"
  echo "cargo publish --dry-run -p chatmill-adapter-sdk failed"
  failed=$((failed + 1))
  status=1
fi
echo "tests: $passed passed, $failed failed"
exit "$status"
