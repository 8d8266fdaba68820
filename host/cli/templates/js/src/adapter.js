// A chatmill adapter for the "{{name}} chat log" format, in JavaScript
// (componentize-js). The export `parser` is the WIT interface: records have
// camelCase fields, variants are `{ tag, val }`, s64/u64 are BigInt, and a
// thrown `{ kind, message, location }` is the `parse-error` of a result.
import { HEADER, NotThisFormat, parse, sniff } from './chatlog.js';

const READ_SIZE = 64 * 1024;

const stamp = (seconds) => (seconds === undefined ? undefined : { seconds: BigInt(seconds), nanos: 0 });

function items(id, chat) {
  const out = [
    {
      tag: 'conversation-start',
      val: {
        id,
        created: chat.pairs.length ? stamp(chat.pairs[0].seconds) : undefined,
        platform: '{{name}}',
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
        user: [{ tag: 'text', val: pair.user }],
        assistant: pair.answers.map((a) => ({ tag: 'text', val: a })),
        metadata: [],
      },
    });
  });
  const skipped = [...chat.skipped].map(([reason, count]) => ({ reason, count }));
  out.push({ tag: 'conversation-end', val: { id, skipped } });
  return out;
}

class Session {
  constructor(items) {
    this.items = items;
  }

  static open(input, _options) {
    const chunks = [];
    for (let chunk = input.read(READ_SIZE); chunk.length; chunk = input.read(READ_SIZE)) {
      chunks.push(chunk);
    }
    const text = new TextDecoder().decode(concat(chunks));
    const name = input.name();
    try {
      return new Session(items(name.replace(/\.[^.]*$/, '') || name, parse(text)));
    } catch (e) {
      const kind = e instanceof NotThisFormat ? 'not-this-format' : 'malformed';
      throw { kind, message: String(e.message ?? e), location: { line: 1n } };
    }
  }

  next(maxItems) {
    return this.items.splice(0, maxItems);
  }
}

function concat(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export const parser = {
  describe() {
    return {
      id: '{{name}}',
      name: '{{name}} chat logs',
      version: '0.1.0',
      formats: [{ id: '{{name}}-v1', description: `${HEADER.slice(2)} files`, filePatterns: ['*.chatlog'] }],
    };
  },
  sniff,
  Session,
};
