"""The adapter's session: one parse of one input. componentize-py looks for
the `session` resource's class in a module named after the exported
interface, `parser`, so it lives here (and `Parser` lives in `app.py`)."""

from componentize_py_types import Err
from wit_world.exports import parser as wit_parser
from wit_world.imports import input as wit_input
from wit_world.imports import types

import sillytavern

READ_SIZE = 64 * 1024


def error(kind: types.ErrorKind, message: str, line: int | None) -> Err:
    location = types.Location(byte_offset=None, line=line, record=None, pointer=None)
    return Err(types.ParseError(kind=kind, message=message, location=location))


class Session(wit_parser.Session):
    def __init__(self, items: list[types.Item]):
        self.items = items

    @classmethod
    def open(cls, input: wit_input.Source, options: list[tuple[str, str]]) -> "Session":
        data = bytearray()
        while chunk := input.read(READ_SIZE):
            data += chunk
        try:
            chat = sillytavern.parse(data.decode("utf-8", errors="replace"))
        except sillytavern.NotThisFormat as e:
            raise error(types.ErrorKind.NOT_THIS_FORMAT, str(e), 1)
        except sillytavern.Malformed as e:
            raise error(types.ErrorKind.MALFORMED, str(e), e.line)
        return cls(items(chat))

    def next(self, max_items: int) -> list[types.Item]:
        batch = self.items[:max_items]
        self.items = self.items[max_items:]
        return batch


def stamp(seconds: int | None) -> types.Timestamp | None:
    return None if seconds is None else types.Timestamp(seconds=seconds, nanos=0)


def items(chat: sillytavern.Chat) -> list[types.Item]:
    # The character and the chat's creation time name a chat in every export.
    conversation_id = f"{chat.character}/{chat.created}"
    start = types.ConversationStart(
        id=conversation_id,
        title=f"Chat with {chat.character}",
        created=stamp(chat.created),
        updated=stamp(chat.pairs[-1].seconds) if chat.pairs else None,
        platform="sillytavern",
        model=None,
        metadata=[("character", chat.character), ("user_name", chat.user)],
    )
    out: list[types.Item] = [types.Item_ConversationStart(start)]
    for index, pair in enumerate(chat.pairs, start=1):
        turn = types.TurnPair(
            index=index,
            timestamp=stamp(pair.seconds),
            model=pair.model,
            user=[types.Part_Text(pair.user)],
            assistant=[types.Part_Text(a) for a in pair.answers],
            metadata=[],
        )
        out.append(types.Item_Pair(turn))
    skipped = [types.SkipCount(reason=r, count=n) for r, n in sorted(chat.skipped.items())]
    end = types.ConversationEnd(id=conversation_id, skipped=skipped)
    out.append(types.Item_ConversationEnd(end))
    return out
