"""The "{{name}} chat log" format, in plain Python (no WebAssembly needed:
`python3 -m unittest` tests it natively).

    # {{name}} chat log v1
    [2024-05-01T10:00:00Z] user: a question
    [2024-05-01T10:00:09Z] assistant: its answer

One file is one conversation; a `user:` line starts a pair, `assistant:` lines
answer it. Replace this with your format's parsing.
"""

from dataclasses import dataclass, field
from datetime import datetime

HEADER = "# {{name}} chat log v1"


class NotThisFormat(Exception):
    """The input is not a {{name}} chat log."""


class Malformed(Exception):
    """The input is a {{name}} chat log, but broken."""

    def __init__(self, message, line):
        super().__init__(message)
        self.line = line


@dataclass
class Pair:
    user: str
    seconds: int | None
    answers: list[str] = field(default_factory=list)


@dataclass
class Chat:
    pairs: list[Pair] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason):
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def sniff(head: bytes, file_name: str) -> int:
    """0-100; 50 or more claims the file. The header is proof, the file name
    only a hint (kept below 50 so it never claims another format's file)."""
    if head.startswith(HEADER.encode()):
        return 95
    return 20 if file_name.endswith(".chatlog") else 0


def seconds(stamp: str) -> int | None:
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def parse(text: str) -> Chat:
    lines = text.split("\n")
    if not lines[0].startswith(HEADER):
        raise NotThisFormat(f"the first line is not `{HEADER}`")
    chat = Chat()
    for line in lines[1:]:
        if not line.strip():
            continue
        if not line.startswith("[") or "] " not in line:
            chat.skip("malformed-line")
            continue
        stamp, said = line[1:].split("] ", 1)
        if said.startswith("user: "):
            chat.pairs.append(Pair(said[len("user: "):], seconds(stamp)))
        elif said.startswith("assistant: "):
            if chat.pairs:
                chat.pairs[-1].answers.append(said[len("assistant: "):])
            else:
                chat.skip("answer-before-question")
        else:
            chat.skip("unknown-speaker")
    return chat
