#!/usr/bin/env bash
# The pinned toolchains for Python and JavaScript adapters, for the author-kit
# tests (tests/e2e/author_kit.rs) and anyone trying the examples:
#   - componentize-py 0.25.1 (pip) in a venv:  $CACHE/componentize-py-0.25.1/bin
#   - componentize-js 0.23.0 (npm):            $CACHE/componentize-js-0.23.0/node_modules
# where CACHE is ${XDG_CACHE_HOME:-~/.cache}/chatmill. Only installs;
# idempotent (a second run only checks a stamp).
#
# componentize-js is driven through its library API (examples/adapter-js/
# build.mjs), not the jco CLI: jco 1.35's CLI cannot see any path
# (`failed to get path metadata`, preview2-shim 0.26's empty preopens), and
# the build disables the `http`/`fetch-event` features, whose imports chatmill
# does not provide.
set -euo pipefail
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/chatmill"
PY_VERSION=0.25.1
JS_VERSION=0.23.0
PY_DIR="$CACHE/componentize-py-$PY_VERSION"
JS_DIR="$CACHE/componentize-js-$JS_VERSION"
mkdir -p "$CACHE"

if [[ ! -f "$PY_DIR/.installed" ]]; then
  rm -rf "$PY_DIR"
  "${PYTHON:-python3}" -m venv "$PY_DIR"
  "$PY_DIR/bin/python" -m pip install --quiet --disable-pip-version-check \
    "componentize-py==$PY_VERSION"
  "$PY_DIR/bin/componentize-py" --version >/dev/null
  touch "$PY_DIR/.installed"
fi

if [[ ! -f "$JS_DIR/.installed" ]]; then
  rm -rf "$JS_DIR"
  mkdir -p "$JS_DIR"
  cat >"$JS_DIR/package.json" <<EOF
{
  "private": true,
  "type": "module",
  "dependencies": { "@bytecodealliance/componentize-js": "$JS_VERSION" }
}
EOF
  (cd "$JS_DIR" && npm install --silent --no-audit --no-fund --save-exact >/dev/null)
  test -d "$JS_DIR/node_modules/@bytecodealliance/componentize-js"
  touch "$JS_DIR/.installed"
fi
