#!/usr/bin/env bash
# The adapter contract and the SDK live in one place each (wit/, adapters/sdk/)
# and are copied where a project must build on its own: the SDK's own wit/
# (so it works published or vendored), the Python and JavaScript examples'
# wit/, and the Rust example's vendored SDK (so each example builds copied
# out of this repository). Tests fail when a copy
# differs; this script brings the copies up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
cp wit/*.wit adapters/sdk/wit/
cp wit/*.wit examples/adapter-python/wit/
cp wit/*.wit examples/adapter-js/wit/
vendor=examples/adapter-linechat/vendor/chatmill-adapter-sdk
rm -rf "$vendor"
mkdir -p "$vendor"
cp -r adapters/sdk/Cargo.toml adapters/sdk/README.md adapters/sdk/src adapters/sdk/wit "$vendor/"
