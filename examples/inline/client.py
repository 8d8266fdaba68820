#!/usr/bin/env python3
"""A chatmill inline-mode client using only the Python standard library.

    python3 client.py --socket PATH            # a short demo session
    python3 client.py --socket PATH --search "query"

Protocol: JSON-RPC 2.0, one JSON object per line (docs/protocol.md).
"""
import argparse
import json
import socket
import sys


class Chatmill:
    def __init__(self, socket_path):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(socket_path)
        self._file = self._sock.makefile("rwb")
        self._id = 0

    def call(self, method, params=None):
        self._id += 1
        request = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params or {}}
        self._file.write(json.dumps(request).encode() + b"\n")
        self._file.flush()
        answer = json.loads(self._file.readline())
        if "error" in answer:
            err = answer["error"]
            hint = (err.get("data") or {}).get("hint")
            raise RuntimeError(f"{err['code']}: {err['message']}" + (f" (hint: {hint})" if hint else ""))
        return answer["result"]

    def turn(self, session_id, turn_index, user, assistant, **extra):
        params = {"session_id": session_id, "turn_index": turn_index, "user": user, "assistant": assistant}
        params.update(extra)
        return self.call("turn", params)

    def search(self, text, k=5, **options):
        return self.call("search", {"queries": [{"text": text}], "k": k, **options})


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--socket", required=True)
    p.add_argument("--search")
    p.add_argument("--session", default="python-demo")
    args = p.parse_args()
    c = Chatmill(args.socket)
    if args.search:
        for hit in c.search(args.search)["hits"]:
            print(f"{hit['score']:.4f}  {hit['chunk_id']}  {hit['meta']['path']}")
        return 0
    exchanges = [
        ("How do I make pytest show print output?", "Run pytest with -s (or --capture=no)."),
        ("And only for one test file?", "Pass the file path too: pytest -s tests/test_api.py."),
    ]
    for i, (user, assistant) in enumerate(exchanges, start=1):
        ack = c.turn(args.session, i, user, assistant, model="demo-model")
        print(json.dumps(ack))
    # The very next query finds what was just said.
    hits = c.search("pytest print output")["hits"]
    print(json.dumps({"top": hits[0]["chunk_id"] if hits else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
