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
    const name = input.name();
    try {
      return new Session(items(name.replace(/\.[^.]*$/, '') || name, parse(readAll(input))));
    } catch (e) {
      // A refused input is a typed error; anything else is a bug, left to crash.
      if (e instanceof NotThisFormat) throw { kind: 'not-this-format', message: e.message, location: { line: 1n } };
      throw e;
    }
  }

  next(maxItems) {
    return this.items.splice(0, maxItems);
  }
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
