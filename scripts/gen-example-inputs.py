#!/usr/bin/env python3
"""Larger inputs for the three example adapters, to measure their throughput
with `chatmill adapters test` (docs/performance.md): one file of about MB
megabytes in each example's format, deterministic (seeded).

    python3 scripts/gen-example-inputs.py OUT_DIR [MB]

writes OUT_DIR/linechat/big.linechat (examples/adapter-linechat),
OUT_DIR/sillytavern/Seraphina - 2024-05-01@10h00m00s.jsonl
(examples/adapter-python) and OUT_DIR/telegram/result.json
(examples/adapter-js).
"""

import json
import random
import sys
from pathlib import Path

WORDS = (
    "the a of to and in is it that for on with as this be are by log file rotate lines copy "
    "truncate signal reopen daemon config path error value list tree sort size disk block "
    "sparse bytes python rust script folder find largest quick way safer why how which when "
    "hike snow pass rifugio book night cash card weather trail map route water boots"
).split()

START = 1714557600  # 2024-05-01T10:00:00Z


def sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + rng.choice([".", "?", "!"])


def turns(rng: random.Random):
    """(seconds, question, answer), without end."""
    t = START
    while True:
        q = sentence(rng, rng.randint(6, 30))
        a = " ".join(sentence(rng, rng.randint(8, 25)) for _ in range(rng.randint(1, 6)))
        t += rng.randint(20, 600)
        yield t, q, a


def stamp(t: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def linechat(out: Path, target: int):
    rng = random.Random(1)
    lines = ["# linechat v1"]
    size = 0
    for t, q, a in turns(rng):
        if size >= target:
            break
        size += len(q) + len(a) + 60
        lines.append(f"[{stamp(t)[:10]} {stamp(t)[11:19]}] me: {q}")
        lines.append(f"[{stamp(t + 9)[:10]} {stamp(t + 9)[11:19]}] bot: {a}")
    out.write_text("\n".join(lines) + "\n")


def sillytavern(out: Path, target: int):
    rng = random.Random(2)
    header = {
        "user_name": "You",
        "character_name": "Seraphina",
        "create_date": "2024-05-01@10h00m00s",
        "chat_metadata": {"note_prompt": "", "note_interval": 1},
    }
    lines = [json.dumps(header)]
    size = 0
    for t, q, a in turns(rng):
        if size >= target:
            break
        size += len(lines[-1]) + 1
        lines.append(json.dumps({"name": "You", "is_user": True, "is_system": False,
                                 "send_date": stamp(t), "mes": q, "extra": {}}))
        swipes = [a, sentence(rng, 10)] if rng.random() < 0.2 else [a]
        lines.append(json.dumps({"name": "Seraphina", "is_user": False, "is_system": False,
                                 "send_date": stamp(t + 9), "mes": a,
                                 "extra": {"api": "openai", "model": "gpt-4o"},
                                 "swipe_id": 0, "swipes": swipes}))
    out.write_text("\n".join(lines) + "\n")


def telegram(out: Path, target: int):
    rng = random.Random(3)
    messages, n, size = [], 100, 0
    for t, q, a in turns(rng):
        if size >= target:
            break
        size += len(q) + len(a) + 330
        for who, text, at in (("Dana", q, t), ("Helper Bot", a, t + 9)):
            n += 1
            body = text
            if who != "Dana" and rng.random() < 0.2:
                body = [text, {"type": "pre", "text": "du -ah . | sort -rh | head", "language": "sh"}]
            messages.append({
                "id": n, "type": "message", "date": stamp(at)[:19], "date_unixtime": str(at),
                "from": who, "from_id": "user1002" if who == "Dana" else "user5012345678",
                "text": body,
            })
    chat = {"name": "Helper Bot", "type": "bot_chat", "id": 5012345678, "messages": messages}
    out.write_text(json.dumps(chat, indent=1, ensure_ascii=False) + "\n")


def main():
    out = Path(sys.argv[1])
    target = int(float(sys.argv[2] if len(sys.argv) > 2 else "4") * 1_000_000)
    for sub, name, write in (
        ("linechat", "big.linechat", linechat),
        ("sillytavern", "Seraphina - 2024-05-01@10h00m00s.jsonl", sillytavern),
        ("telegram", "result.json", telegram),
    ):
        (out / sub).mkdir(parents=True, exist_ok=True)
        write(out / sub / name, target)


if __name__ == "__main__":
    main()
