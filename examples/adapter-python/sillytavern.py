"""SillyTavern chat files, in plain Python (no WebAssembly needed:
`python3 -m unittest` tests it natively).

SillyTavern keeps each chat as JSON Lines under `data/<user>/chats/<character>/`,
named `<character> - <create_date>.jsonl`:

    {"user_name": "You", "character_name": "Seraphina", "create_date": "2024-05-01@10h00m00s", "chat_metadata": {...}}
    {"name": "You", "is_user": true, "send_date": "May 1, 2024 10:00am", "mes": "Hi!"}
    {"name": "Seraphina", "is_user": false, "send_date": "May 1, 2024 10:00am", "mes": "Hello.",
     "extra": {"api": "openai", "model": "gpt-4o"}, "swipe_id": 0, "swipes": ["Hello.", "Hi."]}

The first line is the chat's header; every other line is one message. A user
message starts a pair; the character's messages answer it. System messages
(`is_system`) and the swipes not chosen are counted as skipped. Times carry no
zone in older files; they are read as UTC.
"""

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

# componentize-py's Python has no `_strptime` (so no `datetime.strptime`):
# the two non-ISO spellings are read by hand.
MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}


class NotThisFormat(Exception):
    """The input is not a SillyTavern chat."""


class Malformed(Exception):
    """A SillyTavern chat, broken at `line` (1-based)."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


@dataclass
class Pair:
    user: str
    seconds: int | None
    answers: list[str] = field(default_factory=list)
    model: str | None = None


@dataclass
class Chat:
    character: str
    user: str
    created: int | None
    pairs: list[Pair] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str, n: int = 1):
        if n > 0:
            self.skipped[reason] = self.skipped.get(reason, 0) + n


def seconds(value) -> int | None:
    """Unix seconds of a SillyTavern time: ISO 8601, `May 1, 2024 10:00am`,
    `2024-05-01@10h00m00s`, or epoch milliseconds."""
    if isinstance(value, (int, float)):
        return int(value // 1000)
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = spelled_out(text) or file_stamp(text)
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp())


def spelled_out(text: str) -> datetime | None:
    """`May 1, 2024 10:00am` (the send_date of SillyTavern before 1.12)."""
    try:
        month, day, year, clock = text.replace(",", "").split()
        hour, minute = clock[:-2].split(":")
        hour = int(hour) % 12 + (12 if clock[-2:].lower() == "pm" else 0)
        return datetime(int(year), MONTHS[month[:3].lower()], int(day), hour, int(minute))
    except (ValueError, KeyError):
        return None


def file_stamp(text: str) -> datetime | None:
    """`2024-05-01@10h00m00s` (create_date, as in the chat's file name)."""
    try:
        date, clock = text.split("@")
        year, month, day = (int(x) for x in date.split("-"))
        hour, rest = clock.split("h")
        minute, rest = rest.split("m")
        return datetime(year, month, day, int(hour), int(minute), int(rest.rstrip("s")))
    except ValueError:
        return None


def sniff(head: bytes, file_name: str) -> int:
    """0-100; 50 or more claims the file."""
    first = head.split(b"\n", 1)[0]
    keys = (b'"user_name"', b'"character_name"', b'"chat_metadata"')
    if first.lstrip().startswith(b"{") and all(k in first for k in keys):
        return 90
    return 10 if file_name.endswith(".jsonl") and b'"is_user"' in head else 0


def parse(text: str) -> Chat:
    lines = text.split("\n")
    try:
        header = json.loads(lines[0])
    except ValueError:
        raise NotThisFormat("the first line is not a SillyTavern chat header") from None
    if not isinstance(header, dict) or "character_name" not in header:
        raise NotThisFormat("the first line has no `character_name`")
    chat = Chat(
        character=str(header.get("character_name") or "character"),
        user=str(header.get("user_name") or "user"),
        created=seconds(header.get("create_date")),
    )
    for number, line in enumerate(lines[1:], start=2):
        if line.strip():
            message(chat, line, number)
    return chat


def message(chat: Chat, line: str, number: int):
    try:
        m = json.loads(line)
    except ValueError as e:
        raise Malformed(f"line {number} is not JSON: {e}", number) from None
    if not isinstance(m, dict):
        raise Malformed(f"line {number} is not a message object", number)
    text = m.get("mes")
    if m.get("is_system") or not isinstance(text, str):
        chat.skip("system-message" if m.get("is_system") else "message-without-text")
        return
    if m.get("is_user"):
        chat.pairs.append(Pair(text, seconds(m.get("send_date"))))
        return
    if not chat.pairs:
        chat.skip("greeting-before-first-question")
        return
    pair = chat.pairs[-1]
    pair.answers.append(text)
    extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
    if isinstance(extra.get("model"), str):
        pair.model = extra["model"]
    swipes = m.get("swipes")
    if isinstance(swipes, list):
        chat.skip("alternate-swipe", len(swipes) - 1)
