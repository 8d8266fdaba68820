// A chatmill adapter for Telegram Desktop chat exports, in JavaScript
// (componentize-js). The export `parser` is the WIT interface: records have
// camelCase fields, variants are `{ tag, val }`, s64/u64 are BigInt, and a
// thrown `{ kind, message, location }` is the `parse-error` of a result.
import { Malformed, NotThisFormat, parse, sniff } from './telegram.js';

const READ_SIZE = 64 * 1024;

const stamp = (seconds) => (seconds === undefined ? undefined : { seconds: BigInt(seconds), nanos: 0 });

function part(p) {
  switch (p.kind) {
    case 'code':
      return { tag: 'code', val: { language: p.language, code: p.text } };
    case 'attachment':
      return { tag: 'attachment', val: { name: p.name, mediaType: p.mediaType, uri: p.uri } };
    default:
      return { tag: 'text', val: p.text };
  }
}

function items(chat) {
  const out = [
    {
      tag: 'conversation-start',
      val: {
        id: chat.id,
        title: typeof chat.title === 'string' ? chat.title : undefined,
        created: chat.pairs.length ? stamp(chat.pairs[0].seconds) : undefined,
        updated: chat.pairs.length ? stamp(chat.pairs.at(-1).seconds) : undefined,
        platform: 'telegram',
        metadata: [],
      },
    },
  ];
  chat.pairs.forEach((pair, i) => {
    out.push({
      tag: 'pair',
      val: {
        index: i + 1,
        timestamp: stamp(pair.seconds),
        user: pair.user.map(part),
        assistant: pair.answers.map(part),
        metadata: [['message_id', pair.messageId]],
      },
    });
  });
  const skipped = [...chat.skipped].map(([reason, count]) => ({ reason, count }));
  out.push({ tag: 'conversation-end', val: { id: chat.id, skipped } });
  return out;
}

/** The whole input, read in pieces into one growing buffer (an array of
 * pieces would cost an object per piece: the host may hand out 1 byte). */
function readAll(input) {
  let bytes = new Uint8Array(READ_SIZE);
  let size = 0;
  for (let chunk = input.read(READ_SIZE); chunk.length; chunk = input.read(READ_SIZE)) {
    if (size + chunk.length > bytes.length) {
      const grown = new Uint8Array(Math.max(bytes.length * 2, size + chunk.length));
      grown.set(bytes.subarray(0, size));
      bytes = grown;
    }
    bytes.set(chunk, size);
    size += chunk.length;
  }
  return new TextDecoder().decode(bytes.subarray(0, size));
}

class Session {
  constructor(items) {
    this.items = items;
  }

  static open(input, _options) {
    try {
      return new Session(items(parse(readAll(input))));
    } catch (e) {
      if (e instanceof NotThisFormat) throw { kind: 'not-this-format', message: e.message };
      if (e instanceof Malformed) throw { kind: 'malformed', message: e.message };
      throw e;
    }
  }

  next(maxItems) {
    return this.items.splice(0, maxItems);
  }
}

export const parser = {
  describe() {
    return {
      id: 'telegram',
      name: 'Telegram chat exports',
      version: '1.0.0',
      formats: [
        {
          id: 'telegram-desktop-json',
          description: 'Telegram Desktop "Export chat history" in JSON (result.json)',
          filePatterns: ['result.json'],
        },
      ],
    };
  },
  sniff,
  Session,
};
