"""How long `chatmill watch` takes from a file write to a keyword search
that finds it: N appended Claude Code turns, each polled with `chatmill
search --mode keyword` until it is found. Prints p50/p99 in milliseconds.

Usage: python3 scripts/bench-watch.py [N] [DEBOUNCE_MS]   (after a release build)
"""

import json, os, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
bin = os.path.join(here, "..", "target", "release", "chatmill")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
debounce = sys.argv[2] if len(sys.argv) > 2 else "200"
env = dict(os.environ, CHATMILL_EMBEDDING=os.environ.get("CHATMILL_EMBEDDING", "lexical"))
work = tempfile.mkdtemp()
root, sessions = os.path.join(work, "root"), os.path.join(work, "sessions")
os.makedirs(sessions)
path = os.path.join(sessions, "0b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b.jsonl")
watch = subprocess.Popen([bin, "--root", root, "watch", sessions, "--debounce-ms", debounce],
                         env=env, stderr=subprocess.PIPE, text=True)
watch.stderr.readline()  # "note: watching …"


def line(uuid, parent, kind, message, i):
    return json.dumps({"parentUuid": parent, "isSidechain": False, "type": kind, "uuid": uuid,
                       "sessionId": "0b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b", "cwd": "/w",
                       "timestamp": f"2026-11-20T10:{i // 60:02}:{i % 60:02}.000Z",
                       "message": message})


def found(word):
    out = subprocess.run([bin, "--root", root, "search", "--mode", "keyword", word, "--json"],
                         env=env, capture_output=True, text=True).stdout
    return bool(out) and any(word in h["document"] for h in json.loads(out)["hits"])


lat, parent = [], None
for i in range(n):
    word = f"zq{i:04d}marker"
    u, a = f"u{i}", f"a{i}"
    with open(path, "a") as f:
        f.write(line(u, parent, "user", {"role": "user", "content": f"What about {word} number {i}?"}, i) + "\n")
        f.write(line(a, u, "assistant", {"role": "assistant", "id": f"msg_{i}", "model": "m",
                     "content": [{"type": "text", "text": f"Answer {i}: {word} is fine."}]}, i) + "\n")
    t = time.perf_counter()
    while not found(word):
        time.sleep(0.01)
    lat.append((time.perf_counter() - t) * 1000)
    parent = a
watch.terminate()
watch.wait()
s = sorted(lat)
print(f"watch (debounce {debounce} ms): write -> keyword-searchable n={n} "
      f"p50={statistics.median(s):.0f} ms p99={s[max(0, int(n * 0.99) - 1)]:.0f} ms")
