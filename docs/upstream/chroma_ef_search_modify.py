"""Reproduction for Chroma upstream: a collection's `ef_search`, changed with
`collection.modify(configuration=...)`, is stored (the collection reads back
the new value) but a running server goes on searching with the value it
loaded the index with, until it is restarted.

Self-contained: starts its own `chroma run` on 127.0.0.1 with a fresh data
folder, needs only the chromadb package (and the numpy it depends on).

    python chroma_ef_search_modify.py [PATH_TO_CHROMA_CLI]

Seen with chromadb 1.5.9 (the `chroma` CLI and client of that version):
recall@10 at ef_search 10 stays the same after `modify` to 1,000, and
jumps once the server restarts. Exits 0 when the defect shows, 1 when the
modified value takes effect at once (fixed), 2 on a set-up failure.
"""
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import chromadb
import numpy as np

RECORDS, DIM, QUERIES, K = 20_000, 64, 100, 10


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cli, path, port):
    server = subprocess.Popen([cli, "run", "--path", path, "--host", "127.0.0.1",
                               "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            client = chromadb.HttpClient(host="127.0.0.1", port=port)
            client.heartbeat()
            return server, client
        except Exception:
            time.sleep(0.1)
    server.kill()
    sys.exit("error: the chroma server did not start")


def recall(col, vectors, queries):
    # Exact cosine neighbours, to compare the index's answers with.
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    found = 0
    for q in queries:
        exact = set(np.argsort(-(unit @ (q / np.linalg.norm(q))))[:K].tolist())
        got = col.query(query_embeddings=[q.tolist()], n_results=K, include=[])
        found += len(exact & {int(i) for i in got["ids"][0]})
    return found / (K * len(queries))


def main():
    cli = sys.argv[1] if len(sys.argv) > 1 else shutil.which("chroma")
    if not cli:
        print("error: no `chroma` CLI (pip install chromadb)", file=sys.stderr)
        return 2
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((RECORDS, DIM)).astype(np.float32)
    queries = rng.standard_normal((QUERIES, DIM)).astype(np.float32)
    data, port = tempfile.mkdtemp(prefix="chroma-ef-"), free_port()
    server, client = start(cli, data, port)
    try:
        col = client.create_collection("repro", configuration={"hnsw": {
            "space": "cosine", "ef_construction": 100, "max_neighbors": 16, "ef_search": 10}})
        for i in range(0, RECORDS, 1000):
            col.add(ids=[str(j) for j in range(i, i + 1000)],
                    embeddings=vectors[i:i + 1000].tolist())
        before = recall(col, vectors, queries)
        col.modify(configuration={"hnsw": {"ef_search": 1000}})
        stored = client.get_collection("repro").configuration["hnsw"]["ef_search"]
        after = recall(client.get_collection("repro"), vectors, queries)
    finally:
        server.terminate()
        server.wait()
    server, client = start(cli, data, port)
    try:
        restarted = recall(client.get_collection("repro"), vectors, queries)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(data, ignore_errors=True)
    print(f"chromadb {chromadb.__version__}: {RECORDS} random {DIM}-d vectors, recall@{K} "
          f"over {QUERIES} queries against exact cosine kNN")
    print(f"  created with ef_search 10:            {before:.3f}")
    print(f"  after modify to 1000 (reads back {stored}): {after:.3f}")
    print(f"  after restarting the server:          {restarted:.3f}")
    if abs(after - before) < 0.01 and restarted > after + 0.05:
        print("reproduced: the modified ef_search is stored but used only after a restart")
        return 0
    print("not reproduced: the modified ef_search took effect without a restart")
    return 1


if __name__ == "__main__":
    sys.exit(main())
