"""A chatmill adapter for the "{{name}} chat log" format, in Python
(componentize-py). `describe` and `sniff` live here; the parse session is in
`parser.py`, the format itself in `chatlog.py`."""

from wit_world import exports
from wit_world.imports import types

import chatlog


class Parser(exports.Parser):
    def describe(self) -> types.AdapterInfo:
        return types.AdapterInfo(
            id="{{name}}",
            name="{{name}} chat logs",
            version="0.1.0",
            formats=[
                types.FormatInfo(
                    id="{{name}}-v1",
                    description="{{name}} chat log, version 1",
                    file_patterns=["*.chatlog"],
                )
            ],
        )

    def sniff(self, head: bytes, file_name: str) -> int:
        return chatlog.sniff(head, file_name)
