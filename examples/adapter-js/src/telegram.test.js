// Native tests of the format (`node --test`): no WebAssembly needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { NotThisFormat, parse, parts, sniff } from './telegram.js';

const fixture = readFileSync(new URL('../fixtures/result.json', import.meta.url));

test('the fixture', () => {
  const chat = parse(fixture.toString('utf8'));
  assert.equal(chat.id, '5012345678');
  assert.equal(chat.pairs.length, 3);
  assert.deepEqual([...chat.skipped], [['service-message', 1]]);
  assert.equal(chat.pairs[1].answers[1].kind, 'code');
  assert.equal(chat.pairs[2].user[1].kind, 'attachment');
  assert.ok(sniff(fixture, 'result.json') >= 50);
});

test('entities become text and code', () => {
  const p = parts(['Run ', { type: 'code', text: 'ls' }, ' then:', { type: 'pre', text: 'x = 1', language: 'python' }]);
  assert.deepEqual(p, [
    { kind: 'text', text: 'Run ls then:' },
    { kind: 'code', text: 'x = 1', language: 'python' },
  ]);
});

test('other formats are not claimed', () => {
  assert.ok(sniff(Buffer.from('[{"mapping": {}}]'), 'conversations.json') < 50);
  assert.throws(() => parse('[]'), NotThisFormat);
});
