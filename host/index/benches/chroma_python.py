"""The official chromadb Python client adding the records benches/chroma.rs
dumped (same ids, vectors, documents, metadata) to the same server, in the
client's own maximum batch size. Run by that bench: python chroma_python.py PORT DUMP.json"""
import json
import sys
import time

import chromadb

port, dump = int(sys.argv[1]), sys.argv[2]
data = json.load(open(dump))
client = chromadb.HttpClient(host="127.0.0.1", port=port)
col = client.get_or_create_collection("python_client", configuration={"hnsw": {"space": "cosine"}})
n = len(data["ids"])
batch = client.get_max_batch_size()
t = time.perf_counter()
for i in range(0, n, batch):
    col.add(ids=data["ids"][i:i + batch], embeddings=data["embeddings"][i:i + batch],
            documents=data["documents"][i:i + batch], metadatas=data["metadatas"][i:i + batch])
s = time.perf_counter() - t
assert col.count() == n
print(f"python chromadb client: {n} records in {s:.2f} s = {n / s:.0f} records/s (batches of {batch})")
