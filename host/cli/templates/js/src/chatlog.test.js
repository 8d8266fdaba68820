// Native tests of the format (`node --test`): no WebAssembly needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { NotThisFormat, parse, sniff } from './chatlog.js';

const sample = readFileSync(new URL('../fixtures/sample.chatlog', import.meta.url));

test('the sample is two pairs', () => {
  const chat = parse(sample.toString('utf8'));
  assert.equal(chat.pairs.length, 2);
  assert.equal(chat.pairs[1].answers.length, 2);
  assert.ok(sniff(sample, 'sample.chatlog') >= 50);
});

test('other formats are not claimed', () => {
  assert.ok(sniff(Buffer.from('[{"mapping": {}}]'), 'conversations.json') < 50);
  assert.throws(() => parse(''), NotThisFormat);
});
