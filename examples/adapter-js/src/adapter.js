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

function readAll(input) {
  const chunks = [];
  let size = 0;
  for (let chunk = input.read(READ_SIZE); chunk.length; chunk = input.read(READ_SIZE)) {
    chunks.push(chunk);
    size += chunk.length;
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(bytes);
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
