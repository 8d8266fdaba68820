"""Wall time of `chatmill hook claude-code` per call, through the binary, as
Claude Code runs it after each turn: a real transcript from the corpus grows
between calls (the first FIRST lines, then CALLS steps to its end), each
call gets the hook's JSON on stdin, against a fresh root. The first call
(the bulk of the transcript, and the adapter's compiled cache) is printed
apart; the others give min/median/max in milliseconds.

The embedder is the configured default (the local model once
`scripts/setup-model.sh` ran); CHATMILL_EMBEDDING=lexical gives the floor
without any model.

Usage: python3 scripts/bench-hook.py [CALLS] [TRANSCRIPT]
       (after `cargo build --release -p chatmill`; default 10 calls on
       claude-code-viewer-fe5e1c67-….jsonl, 438 lines)
"""

import json, os, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
bin = os.path.join(here, "..", "target", "release", "chatmill")
calls = int(sys.argv[1]) if len(sys.argv) > 1 else 10
source = (
    sys.argv[2]
    if len(sys.argv) > 2
    else "/work/shared/corpus/claude-code/claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
)

with open(source, encoding="utf-8") as f:
    lines = f.readlines()
first = len(lines) // 2
step = max(1, (len(lines) - first) // calls)

with tempfile.TemporaryDirectory() as tmp:
    root = os.path.join(tmp, "root")
    transcript = os.path.join(tmp, "projects", "-bench", os.path.basename(source))
    os.makedirs(os.path.dirname(transcript))
    config = os.path.join(tmp, "config.toml")
    open(config, "w").close()
    env = dict(os.environ, CHATMILL_CONFIG=config)
    payload = json.dumps(
        {
            "session_id": "bench",
            "transcript_path": transcript,
            "hook_event_name": "Stop",
        }
    ).encode()

    def call():
        t = time.perf_counter()
        subprocess.run(
            [bin, "--root", root, "hook", "claude-code"],
            input=payload,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return (time.perf_counter() - t) * 1000

    done = first
    with open(transcript, "w", encoding="utf-8") as f:
        f.writelines(lines[:done])
    bulk = call()
    times = []
    for i in range(calls):
        upto = len(lines) if i == calls - 1 else done + step
        with open(transcript, "a", encoding="utf-8") as f:
            f.writelines(lines[done:upto])
        done = upto
        times.append(call())
    with open(os.path.join(root, ".chatmill", "hook.log"), encoding="utf-8") as f:
        log = f.read().splitlines()
    print(f"first call ({first} lines): {bulk:.0f} ms")
    print(
        f"{calls} calls (+{step} lines each): min {min(times):.0f} ms, "
        f"median {statistics.median(times):.0f} ms, max {max(times):.0f} ms"
    )
    print("last log line:", log[-1])
