"""Ack latency and throughput of `chatmill serve` through the binary, as a
user runs it: C clients, each on its own connection, send T turns one
after another (each waits for its answer) to a fresh root, once with the
writer taking one turn at a time (CHATMILL_SERVE_BATCH=1) and once batched
(the default). Prints p50/p95/p99/max in milliseconds and turns/s.

The embedder is the configured default (the local model once
`scripts/setup-model.sh` ran; CHATMILL_EMBEDDING=lexical for the stand-in).
With `turn`, each turn is sent by a `chatmill turn --json-stdin` process
instead (its start-up included in the latency).

Usage: python3 scripts/bench-serve.py [CLIENTS] [TURNS] [socket|turn]
       (after `cargo build --release -p chatmill`; default 4 clients x 60 turns)
"""

import json, os, signal, socket, subprocess, sys, tempfile, threading, time

here = os.path.dirname(os.path.abspath(__file__))
bin = os.path.join(here, "..", "target", "release", "chatmill")
clients = int(sys.argv[1]) if len(sys.argv) > 1 else 4
turns = int(sys.argv[2]) if len(sys.argv) > 2 else 60
via = sys.argv[3] if len(sys.argv) > 3 else "socket"


def params(c, t):
    return {
        "session_id": f"bench-{c}",
        "turn_index": t,
        "user": f"Client {c}, turn {t}: how should the cache invalidate entry {t} after a schema migration?",
        "assistant": "Version the keys with the schema hash, then let old entries expire. " * 6,
    }


def health(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    f = s.makefile("rwb")
    f.write(b'{"jsonrpc":"2.0","id":1,"method":"health"}\n')
    f.flush()
    answer = json.loads(f.readline())["result"]
    s.close()
    return answer


def over_socket(path, c, lat):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    f = s.makefile("rwb")
    for t in range(1, turns + 1):
        req = {"jsonrpc": "2.0", "id": t, "method": "turn", "params": params(c, t)}
        t0 = time.perf_counter()
        f.write((json.dumps(req) + "\n").encode())
        f.flush()
        answer = json.loads(f.readline())
        lat.append(time.perf_counter() - t0)
        assert answer["result"]["indexed"], answer
    s.close()


def over_cli(path, c, lat, env):
    for t in range(1, turns + 1):
        t0 = time.perf_counter()
        out = subprocess.run([bin, "turn", "--socket", path, "--json-stdin"], env=env,
                             input=json.dumps(params(c, t)), capture_output=True, text=True)
        lat.append(time.perf_counter() - t0)
        assert out.returncode == 0, out.stderr


def run(batch):
    work = tempfile.mkdtemp()
    root, sock = os.path.join(work, "root"), os.path.join(work, "s.sock")
    env = dict(os.environ)
    env.pop("CHATMILL_SERVE_BATCH", None)
    if batch:
        env["CHATMILL_SERVE_BATCH"] = batch
    server = subprocess.Popen([bin, "--root", root, "serve", "--socket", sock, "--print-socket"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    server.stdout.readline()  # the socket path, once listening
    if batch == "1":
        print("embedder:", health(sock)["index"]["embedder"])
    lats = [[] for _ in range(clients)]
    work_of = (lambda c: over_socket(sock, c, lats[c])) if via == "socket" else \
        (lambda c: over_cli(sock, c, lats[c], env))
    threads = [threading.Thread(target=work_of, args=(c,)) for c in range(clients)]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - start
    server.send_signal(signal.SIGTERM)
    server.wait()
    s = sorted(x * 1000 for l in lats for x in l)
    assert len(s) == clients * turns, "a client failed"
    pct = lambda p: s[round((len(s) - 1) * p)]
    how = "one at a time" if batch == "1" else "batched"
    print(f"chatmill serve ({via}), {clients} clients x {turns} turns, {how:<13} "
          f"p50 {pct(0.5):6.1f} ms  p95 {pct(0.95):6.1f} ms  p99 {pct(0.99):6.1f} ms  "
          f"max {s[-1]:6.1f} ms  {len(s) / wall:5.1f} turns/s")


for batch in ["1", None]:
    run(batch)
