// The "{{name}} chat log" format, in plain JavaScript (no WebAssembly
// needed: `node --test` tests it natively).
//
//     # {{name}} chat log v1
//     [2024-05-01T10:00:00Z] user: a question
//     [2024-05-01T10:00:09Z] assistant: its answer
//
// One file is one conversation; a `user:` line starts a pair, `assistant:`
// lines answer it. Replace this with your format's parsing.

export const HEADER = '# {{name}} chat log v1';

export class NotThisFormat extends Error {}

/** 0-100; 50 or more claims the file. The file name alone stays below 50. */
export function sniff(head, fileName) {
  const start = new TextDecoder().decode(head.subarray(0, HEADER.length));
  if (start === HEADER) return 95;
  return fileName.endsWith('.chatlog') ? 20 : 0;
}

/** Unix seconds of an RFC 3339 time, or undefined. */
function seconds(stamp) {
  const ms = Date.parse(stamp);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/** { pairs: [{ user, seconds, answers }], skipped: Map<reason, count> } */
export function parse(text) {
  const lines = text.split('\n');
  if (!lines[0].startsWith(HEADER)) {
    throw new NotThisFormat(`the first line is not \`${HEADER}\``);
  }
  const chat = { pairs: [], skipped: new Map() };
  const skip = (reason) => chat.skipped.set(reason, (chat.skipped.get(reason) ?? 0) + 1);
  for (const line of lines.slice(1)) {
    if (!line.trim()) continue;
    const close = line.indexOf('] ');
    if (!line.startsWith('[') || close < 0) {
      skip('malformed-line');
      continue;
    }
    const stamp = line.slice(1, close);
    const said = line.slice(close + 2);
    if (said.startsWith('user: ')) {
      chat.pairs.push({ user: said.slice(6), seconds: seconds(stamp), answers: [] });
    } else if (said.startsWith('assistant: ')) {
      if (chat.pairs.length) chat.pairs.at(-1).answers.push(said.slice(11));
      else skip('answer-before-question');
    } else {
      skip('unknown-speaker');
    }
  }
  return chat;
}
