#!/usr/bin/env node
// The chat page's server-sent events parser (readEvents in server/chat_page.html), taken
// out of the page and fed streams cut in every place: between the bytes of a UTF-8
// character, inside "data:", between \r and \n. No server, no browser, no package.
// Usage: node tests/server/sse_parser_test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const page = fs.readFileSync(new URL('../../server/chat_page.html', import.meta.url), 'utf8');
const src = page.match(/async function readEvents\([\s\S]*?\n}\n/);
assert.ok(src, 'readEvents not found in the page');
const readEvents = new Function(`${src[0]}; return readEvents;`)();

// A ReadableStream of the bytes of `text`, cut at the given byte offsets.
function streamOf(bytes, cuts) {
    const parts = [];
    let at = 0;
    for (const c of [...cuts, bytes.length]) { parts.push(bytes.subarray(at, c)); at = c; }
    return new ReadableStream({ pull(ctrl) { parts.length ? ctrl.enqueue(parts.shift()) : ctrl.close(); } });
}
async function events(text, cuts = []) {
    const out = [];
    await readEvents(streamOf(new TextEncoder().encode(text), cuts), (d) => { out.push(d); return d !== '[DONE]'; });
    return out;
}

const STREAM = 'data: {"c":"caf\u00e9 \u2615 \ud83d\udd25"}\n\n: a comment\n\nevent: x\nid: 3\ndata:{"c":"no space"}\n\ndata: a\ndata: b\n\ndata: [DONE]\n\ndata: after\n\n';
const WANT = ['{"c":"caf\u00e9 \u2615 \ud83d\udd25"}', '{"c":"no space"}', 'a\nb', '[DONE]'];

test('whole: events, comments and other fields skipped, multi-line data joined, nothing after [DONE]', async () => {
    assert.deepEqual(await events(STREAM), WANT);
});

test('cut at every byte: the same events', async () => {
    const n = new TextEncoder().encode(STREAM).length;
    for (let i = 1; i < n; i++) assert.deepEqual(await events(STREAM, [i]), WANT, `cut at byte ${i}`);
    assert.deepEqual(await events(STREAM, [...Array(n - 1).keys()].map((i) => i + 1)), WANT, 'one byte a chunk');
});

test('\\r\\n and \\r line ends, \\r\\n cut between its two bytes', async () => {
    for (const eol of ['\r\n', '\r']) {
        const text = STREAM.replaceAll('\n', eol);
        const n = new TextEncoder().encode(text).length;
        for (let i = 1; i < n; i++) assert.deepEqual(await events(text, [i]), WANT, `${JSON.stringify(eol)}, cut at byte ${i}`);
    }
});

test('an event the stream ends in the middle of is dropped, as EventSource does', async () => {
    assert.deepEqual(await events('data: x\n\ndata: y'), ['x']);
    assert.deepEqual(await events('data: x\n\ndata: y\n'), ['x']);
});
