// Telegram Desktop chat exports ("Export chat history", JSON), in plain
// JavaScript (no WebAssembly needed: `node --test` tests it natively).
//
// One export of one chat is `result.json`:
//
//     { "name": "Helper Bot", "type": "bot_chat", "id": 5012345678,
//       "messages": [ { "id": 101, "type": "message", "date": "2024-05-01T10:00:00",
//                       "date_unixtime": "1714557600", "from": "Dana", "from_id": "user1002",
//                       "text": "plain text, or a list of strings and entities",
//                       "text_entities": [ ... ] }, ... ] }
//
// The other side of a chat is the user whose `from_id` is `user<chat id>` (a
// bot, in a chat with an AI bot). A message from anyone else starts a pair;
// the other side's messages answer it. Service messages (joins, pins) are
// counted as skipped. `date` is local time without a zone, so the times come
// from `date_unixtime`.

export class NotThisFormat extends Error {}
export class Malformed extends Error {}

const CHAT_TYPES = ['bot_chat', 'personal_chat', 'private_group', 'private_supergroup', 'saved_messages'];

/** 0-100; 50 or more claims the file. */
export function sniff(head, fileName) {
  const text = new TextDecoder().decode(head);
  const start = text.trimStart();
  if (!start.startsWith('{')) return 0;
  const typed = CHAT_TYPES.some((t) => text.includes(`"type": "${t}"`));
  const stamped = text.includes('"date_unixtime"');
  if (typed && stamped && text.includes('"messages"')) return 90;
  return fileName === 'result.json' && stamped ? 30 : 0;
}

/** The parts of a message's `text`: a string, or strings and entities. */
export function parts(text) {
  const pieces = typeof text === 'string' ? [text] : Array.isArray(text) ? text : [];
  const out = [];
  let prose = '';
  const flush = () => {
    if (prose.trim()) out.push({ kind: 'text', text: prose });
    prose = '';
  };
  for (const piece of pieces) {
    if (typeof piece === 'string') prose += piece;
    else if (piece && piece.type === 'pre') {
      flush();
      out.push({ kind: 'code', text: String(piece.text ?? ''), language: piece.language || undefined });
    } else if (piece && typeof piece.text === 'string') prose += piece.text;
  }
  flush();
  return out;
}

/** { id, title, pairs: [{ messageId, seconds, user, answers }], skipped: Map } */
export function parse(text) {
  let chat;
  try {
    chat = JSON.parse(text);
  } catch (e) {
    if (!text.trimStart().startsWith('{')) throw new NotThisFormat('not a JSON object');
    throw new Malformed(`not valid JSON: ${e.message}`);
  }
  if (!chat || typeof chat !== 'object' || !Array.isArray(chat.messages) || chat.id === undefined) {
    throw new NotThisFormat('no `id` and `messages`: not a Telegram chat export');
  }
  const other = `user${chat.id}`;
  const out = { id: String(chat.id), title: chat.name, pairs: [], skipped: new Map() };
  const skip = (reason) => out.skipped.set(reason, (out.skipped.get(reason) ?? 0) + 1);
  for (const m of chat.messages) {
    if (!m || m.type !== 'message') {
      skip('service-message');
      continue;
    }
    const content = parts(m.text);
    if (m.photo) content.push({ kind: 'attachment', name: String(m.photo).split('/').pop(), uri: String(m.photo), mediaType: 'image/jpeg' });
    if (m.file) content.push({ kind: 'attachment', name: m.file_name || String(m.file).split('/').pop(), uri: String(m.file), mediaType: m.mime_type });
    if (!content.length) {
      skip('empty-message');
      continue;
    }
    const seconds = Number(m.date_unixtime);
    if (m.from_id !== other) {
      out.pairs.push({ messageId: String(m.id), seconds: Number.isFinite(seconds) ? seconds : undefined, user: content, answers: [] });
    } else if (out.pairs.length) {
      out.pairs.at(-1).answers.push(...content);
    } else {
      skip('answer-before-question');
    }
  }
  return out;
}
