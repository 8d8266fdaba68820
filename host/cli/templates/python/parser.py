"""The adapter's session: one parse of one input. componentize-py looks for
the `session` resource's class in a module named after the exported
interface, `parser`, so it lives here (and `Parser` lives in `app.py`)."""

from componentize_py_types import Err
from wit_world.exports import parser as wit_parser
from wit_world.imports import input as wit_input
from wit_world.imports import types

import chatlog

READ_SIZE = 64 * 1024


def error(kind: types.ErrorKind, message: str, line: int | None = None) -> Err:
    location = None
    if line is not None:
        location = types.Location(byte_offset=None, line=line, record=None, pointer=None)
    return Err(types.ParseError(kind=kind, message=message, location=location))


class Session(wit_parser.Session):
    def __init__(self, items: list[types.Item]):
        self.items = items

    @classmethod
    def open(cls, input: wit_input.Source, options: list[tuple[str, str]]) -> "Session":
        name = input.name()
        data = bytearray()
        while chunk := input.read(READ_SIZE):
            data += chunk
        try:
            chat = chatlog.parse(data.decode("utf-8", errors="replace"))
        except chatlog.NotThisFormat as e:
            raise error(types.ErrorKind.NOT_THIS_FORMAT, str(e), 1)
        except chatlog.Malformed as e:
            raise error(types.ErrorKind.MALFORMED, str(e), e.line)
        return cls(items(name.rsplit(".", 1)[0] or name, chat))

    def next(self, max_items: int) -> list[types.Item]:
        batch = self.items[:max_items]
        self.items = self.items[max_items:]
        return batch


def stamp(seconds: int | None) -> types.Timestamp | None:
    return None if seconds is None else types.Timestamp(seconds=seconds, nanos=0)


def items(conversation_id: str, chat: chatlog.Chat) -> list[types.Item]:
    start = types.ConversationStart(
        id=conversation_id,
        title=None,
        created=stamp(chat.pairs[0].seconds) if chat.pairs else None,
        updated=None,
        platform="{{name}}",
        model=None,
        metadata=[],
    )
    out: list[types.Item] = [types.Item_ConversationStart(start)]
    for index, pair in enumerate(chat.pairs, start=1):
        out.append(
            types.Item_Pair(
                types.TurnPair(
                    index=index,
                    timestamp=stamp(pair.seconds),
                    model=None,
                    user=[types.Part_Text(pair.user)],
                    assistant=[types.Part_Text(a) for a in pair.answers],
                    metadata=[],
                )
            )
        )
    skipped = [types.SkipCount(reason=r, count=n) for r, n in sorted(chat.skipped.items())]
    out.append(types.Item_ConversationEnd(types.ConversationEnd(id=conversation_id, skipped=skipped)))
    return out
