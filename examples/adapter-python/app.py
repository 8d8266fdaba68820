"""A chatmill adapter for SillyTavern chat files, in Python (componentize-py).
`describe` and `sniff` live here; the parse session is in `parser.py`, the
format in `sillytavern.py`."""

from wit_world import exports
from wit_world.imports import types

import sillytavern


class Parser(exports.Parser):
    def describe(self) -> types.AdapterInfo:
        return types.AdapterInfo(
            id="sillytavern",
            name="SillyTavern chats",
            version="1.0.0",
            formats=[
                types.FormatInfo(
                    id="sillytavern-chat-jsonl",
                    description="SillyTavern chat file (JSON Lines: a header line, then one message a line)",
                    file_patterns=["*.jsonl"],
                )
            ],
        )

    def sniff(self, head: bytes, file_name: str) -> int:
        return sillytavern.sniff(head, file_name)
