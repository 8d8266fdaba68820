"""The official chromadb Python client adding the records benches/chroma.rs
dumped (same ids, vectors, documents, metadata) to the same server, in the
client's own maximum batch size, then querying with the first 200 records'
vectors (k = 10, as the Rust side does on the same collection).
Run by that bench: python chroma_python.py PORT DUMP.json"""
import json
import sys
import time

import chromadb

port, dump = int(sys.argv[1]), sys.argv[2]
data = json.load(open(dump))
client = chromadb.HttpClient(host="127.0.0.1", port=port)
# The HNSW parameters chatmill gives its collections (chroma.rs `hnsw()`),
# so both clients build the same graph.
col = client.get_or_create_collection("python_client", configuration={"hnsw": {
    "space": "cosine", "max_neighbors": 64, "ef_construction": 400, "ef_search": 1000}})
n = len(data["ids"])
batch = client.get_max_batch_size()
t = time.perf_counter()
for i in range(0, n, batch):
    col.add(ids=data["ids"][i:i + batch], embeddings=data["embeddings"][i:i + batch],
            documents=data["documents"][i:i + batch], metadatas=data["metadatas"][i:i + batch])
s = time.perf_counter() - t
assert col.count() == n
print(f"python chromadb client: {n} records in {s:.2f} s = {n / s:.0f} records/s (batches of {batch})")
queries = data["embeddings"][:200]
t = time.perf_counter()
for v in queries:
    r = col.query(query_embeddings=[v], n_results=10, include=["documents", "metadatas", "distances"])
    assert r["ids"][0]
s = time.perf_counter() - t
print(f"python chromadb client: {len(queries)} queries in {s:.2f} s = {len(queries) / s:.0f} queries/s (k = 10)")
