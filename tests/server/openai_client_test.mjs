#!/usr/bin/env node
// hearth's server through the official openai npm package (pinned in package.json): what
// a program written for OpenAI's API sees. Run `npm ci` in tests/server first.
//
// Usage: node tests/server/openai_client_test.mjs --url http://127.0.0.1:PORT [--api-key KEY]
//        (or HEARTH_URL, HEARTH_API_KEY). --api-key says the server was started with one,
//        and turns on the tests of a wrong or missing key.
// node:test reports each test; the exit code is non-zero if any failed.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

function option(name, env) {
    const i = process.argv.indexOf(name);
    return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : process.env[env];
}
const URL_ = option('--url', 'HEARTH_URL');
if (!URL_) {
    console.error('openai_client_test: --url http://127.0.0.1:PORT (or HEARTH_URL) is required');
    process.exit(2);
}
const BASE = URL_.replace(/\/+$/, '');
const API_KEY = option('--api-key', 'HEARTH_API_KEY') || '';

// No retries: an error must reach the test as the server gave it.
const makeClient = (apiKey) => new OpenAI({ baseURL: BASE + '/v1', apiKey, maxRetries: 0, timeout: 180_000 });
const client = makeClient(API_KEY || 'no-key-needed');
const OPTS = { timeout: 300_000 };
let model;

const SYSTEM = { role: 'system', content: 'You are a helpful assistant.' };
const USER = { role: 'user', content: 'Tell me about the fire in the hearth.' };
const FINISH = ['stop', 'length'];

function checkUsage(usage, maxCompletion) {
    assert.ok(usage, 'no usage');
    for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens'])
        assert.ok(Number.isInteger(usage[k]) && usage[k] >= 0, `usage.${k} is ${usage[k]}`);
    assert.ok(usage.prompt_tokens > 0, 'usage.prompt_tokens is 0');
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens, 'total_tokens is not the sum');
    if (maxCompletion !== undefined) assert.ok(usage.completion_tokens <= maxCompletion, `completion_tokens ${usage.completion_tokens} > ${maxCompletion}`);
}

// Reads a chat stream: its chunks and the text of their delta.content joined.
async function collectChat(stream) {
    const chunks = [];
    let text = '';
    for await (const chunk of stream) {
        chunks.push(chunk);
        const c = chunk.choices?.[0];
        if (typeof c?.delta?.content === 'string') text += c.delta.content;
    }
    return { chunks, text };
}
async function collectText(stream) {
    const chunks = [];
    let text = '';
    for await (const chunk of stream) {
        chunks.push(chunk);
        if (typeof chunk.choices?.[0]?.text === 'string') text += chunk.choices[0].text;
    }
    return { chunks, text };
}

// Expects the promise to fail with the server's error in OpenAI's shape.
async function expectError(promise, status, Class, messagePattern) {
    await assert.rejects(promise, (err) => {
        assert.ok(err instanceof OpenAI.APIError, `not an APIError: ${err}`);
        assert.equal(err.status, status, `status ${err.status}: ${err.message}`);
        if (Class) assert.ok(err instanceof Class, `${err.constructor.name}, not ${Class.name}`);
        assert.equal(typeof err.error?.message, 'string', `error.message is missing: ${JSON.stringify(err.error)}`);
        assert.ok(err.error.message.length > 0, 'error.message is empty');
        assert.equal(typeof err.error?.type, 'string', `error.type is missing: ${JSON.stringify(err.error)}`);
        if (messagePattern) assert.match(err.error.message, messagePattern);
        return true;
    });
}

before(async () => {
    const page = await client.models.list();
    model = page.data[0]?.id ?? 'hearth';
});

test('models.list returns one model with an id', OPTS, async () => {
    const page = await client.models.list();
    assert.equal(page.data.length, 1, `models: ${JSON.stringify(page.data)}`);
    assert.equal(typeof page.data[0].id, 'string');
    assert.ok(page.data[0].id.length > 0, 'the id is empty');
});

test('models.retrieve gives the model by its id, and 404 for another', OPTS, async () => {
    const m = await client.models.retrieve(model);
    assert.equal(m.id, model);
    assert.equal(m.object, 'model');
    await expectError(client.models.retrieve('no-such-model'), 404, OpenAI.NotFoundError);
});

test('a client whose base URL lacks /v1 is served too (the paths without /v1)', OPTS, async () => {
    const bare = new OpenAI({ baseURL: BASE, apiKey: API_KEY || 'no-key-needed', maxRetries: 0, timeout: 180_000 });
    const page = await bare.models.list();
    assert.equal(page.data[0]?.id, model);
    const r = await bare.chat.completions.create({ model, messages: [USER], temperature: 0, max_tokens: 2 });
    assert.equal(r.object, 'chat.completion');
    const c = await bare.completions.create({ model, prompt: 'The', temperature: 0, max_tokens: 2 });
    assert.equal(c.object, 'text_completion');
});

test('chat.completions.create: a reply in OpenAI\'s shape', OPTS, async () => {
    const r = await client.chat.completions.create({ model, messages: [SYSTEM, USER], temperature: 0, max_tokens: 8 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(typeof r.id, 'string');
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(FINISH.includes(r.choices[0].finish_reason), `finish_reason ${r.choices[0].finish_reason}`);
    checkUsage(r.usage, 8);
});

for (const limit of ['max_tokens', 'max_completion_tokens']) {
    test(`chat.completions.create: ${limit} 3 ends the reply at 3 tokens`, OPTS, async () => {
        const r = await client.chat.completions.create({ model, messages: [USER], temperature: 0, [limit]: 3 });
        const finish = r.choices[0].finish_reason;
        checkUsage(r.usage, 3);
        if (finish === 'length') assert.equal(r.usage.completion_tokens, 3);
        else assert.equal(finish, 'stop', `finish_reason ${finish}`);
    });
}

test('streamed, the chat reply is the same text as unstreamed, in chunks of OpenAI\'s shape', OPTS, async () => {
    const req = { model, messages: [SYSTEM, USER], temperature: 0, seed: 42, max_tokens: 16 };
    const plain = await client.chat.completions.create(req);
    const { chunks, text } = await collectChat(await client.chat.completions.create({ ...req, stream: true }));
    assert.ok(chunks.length >= 2, `${chunks.length} chunk(s)`);
    assert.equal(chunks[0].choices[0].delta.role, 'assistant', 'the first chunk has no delta.role "assistant"');
    for (const c of chunks) {
        assert.equal(c.object, 'chat.completion.chunk');
        assert.equal(c.id, chunks[0].id, 'the chunks have different ids');
        assert.equal(c.choices.length, 1, `a chunk with ${c.choices.length} choices`);
        assert.ok(!c.usage, 'usage in a chunk without stream_options.include_usage');
    }
    const last = chunks[chunks.length - 1].choices[0];
    assert.ok(FINISH.includes(last.finish_reason), `the last chunk's finish_reason is ${last.finish_reason}`);
    for (const c of chunks.slice(0, -1)) assert.equal(c.choices[0].finish_reason, null, 'a finish_reason before the last chunk');
    assert.equal(text, plain.choices[0].message.content);
    assert.equal(last.finish_reason, plain.choices[0].finish_reason);
});

test('stream_options.include_usage: a last chunk with the usage and no choices', OPTS, async () => {
    const req = { model, messages: [USER], temperature: 0, seed: 42, max_tokens: 6 };
    const plain = await client.chat.completions.create(req);
    const { chunks } = await collectChat(await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } }));
    const last = chunks[chunks.length - 1];
    assert.deepEqual(last.choices, [], 'the usage chunk has choices');
    checkUsage(last.usage, 6);
    assert.deepEqual(last.usage, plain.usage, 'the streamed usage differs from the unstreamed one');
    for (const c of chunks.slice(0, -1)) assert.ok(c.usage == null, 'usage before the last chunk');
});

test('completions.create: a text completion, unstreamed and streamed', OPTS, async () => {
    const req = { model, prompt: 'Once upon a time', max_tokens: 5, temperature: 0 };
    const r = await client.completions.create(req);
    assert.equal(r.object, 'text_completion');
    assert.equal(r.choices.length, 1);
    assert.equal(typeof r.choices[0].text, 'string');
    assert.ok(FINISH.includes(r.choices[0].finish_reason), `finish_reason ${r.choices[0].finish_reason}`);
    checkUsage(r.usage, 5);
    const { chunks, text } = await collectText(await client.completions.create({ ...req, stream: true }));
    assert.ok(chunks.length >= 1);
    assert.equal(text, r.choices[0].text);
    assert.equal(chunks[chunks.length - 1].choices[0].finish_reason, r.choices[0].finish_reason);
});

test('completions.create with echo and logprobs: the prompt scored, as a loglikelihood evaluation asks', OPTS, async () => {
    const prompt = 'Once upon a time';
    const r = await client.completions.create({ model, prompt, echo: true, logprobs: 1, max_tokens: 1, temperature: 0 });
    const c = r.choices[0];
    assert.ok(c.text.startsWith(prompt), `the text does not begin with the prompt: ${JSON.stringify(c.text)}`);
    const lp = c.logprobs;
    const n = r.usage.prompt_tokens + r.usage.completion_tokens;
    for (const k of ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset']) assert.equal(lp[k].length, n, `logprobs.${k}`);
    assert.equal(lp.token_logprobs[0], null, 'the first prompt token has no log-probability');
    for (let i = 1; i < n; i++) {
        assert.ok(lp.token_logprobs[i] <= 0, `token_logprobs[${i}] = ${lp.token_logprobs[i]}`);
        assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1], 'text_offset goes back');
    }
    assert.equal(lp.text_offset[n - 1], prompt.length, 'the reply starts where the prompt ends');
    const only = await client.completions.create({ model, prompt, echo: true, max_tokens: 0 });
    assert.equal(only.choices[0].text, prompt);
    assert.equal(only.usage.completion_tokens, 0);
});

test('stop: a string and a list end the reply before the stop text, streamed or not', OPTS, async () => {
    const req = { model, messages: [USER], temperature: 0, seed: 7, max_tokens: 24 };
    const base = (await client.chat.completions.create(req)).choices[0].message.content;
    if (base.length < 8) return assert.fail(`the greedy reply is too short to pick a stop text from: ${JSON.stringify(base)}`);
    // Stop texts taken from the greedy reply itself: the reply with them is the greedy
    // reply up to the first place one occurs.
    const mid = base.slice(Math.floor(base.length / 2), Math.floor(base.length / 2) + 3);
    const third = base.slice(Math.floor(base.length / 3), Math.floor(base.length / 3) + 2);
    for (const stop of [mid, ['zq#never-said#qz', third]]) {
        const texts = [].concat(stop).filter((s) => base.includes(s));
        const at = Math.min(...texts.map((s) => base.indexOf(s)));
        const want = base.slice(0, at);
        const r = await client.chat.completions.create({ ...req, stop });
        const got = r.choices[0].message.content;
        for (const s of texts) assert.ok(!got.includes(s), `the reply ${JSON.stringify(got)} contains the stop text ${JSON.stringify(s)}`);
        assert.equal(got, want, `stop ${JSON.stringify(stop)}`);
        assert.equal(r.choices[0].finish_reason, 'stop');
        const streamed = await collectChat(await client.chat.completions.create({ ...req, stop, stream: true }));
        assert.equal(streamed.text, want, `streamed, stop ${JSON.stringify(stop)}`);
        assert.equal(streamed.chunks[streamed.chunks.length - 1].choices[0].finish_reason, 'stop');
    }
});

test('seed: the same seed at temperature 0.8 gives the same text', OPTS, async () => {
    const req = { model, messages: [USER], temperature: 0.8, seed: 1234, max_tokens: 16 };
    const a = (await client.chat.completions.create(req)).choices[0].message.content;
    const b = (await client.chat.completions.create(req)).choices[0].message.content;
    assert.equal(b, a);
    const streamed = await collectChat(await client.chat.completions.create({ ...req, stream: true }));
    assert.equal(streamed.text, a, 'streamed with the same seed');
});

test('n: 2 is refused with 400 naming n, streamed or not', OPTS, async () => {
    await expectError(client.chat.completions.create({ model, messages: [USER], n: 2, max_tokens: 4 }), 400, OpenAI.BadRequestError, /\bn\b/);
    await expectError(client.chat.completions.create({ model, messages: [USER], n: 2, max_tokens: 4, stream: true }), 400, OpenAI.BadRequestError, /\bn\b/);
});

test('tools are refused with 400 naming tools', OPTS, async () => {
    const tools = [{ type: 'function', function: { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: {} } } }];
    await expectError(client.chat.completions.create({ model, messages: [USER], tools, max_tokens: 4 }), 400, OpenAI.BadRequestError, /tools/);
});

// Checks a chat reply's logprobs.content: one entry per generated token, each with its bytes
// and `top` alternatives, most likely first, the token itself first (greedy).
function checkChatLogprobs(content, completionTokens, top) {
    assert.ok(Array.isArray(content), 'no logprobs.content');
    assert.equal(content.length, completionTokens, 'one entry per generated token');
    for (const t of content) {
        assert.equal(typeof t.token, 'string');
        assert.ok(Array.isArray(t.bytes) && t.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256), 'bytes');
        assert.ok(t.logprob <= 0, `logprob ${t.logprob}`);
        assert.equal(t.top_logprobs.length, top);
        assert.equal(t.top_logprobs[0].token, t.token);
        assert.equal(t.top_logprobs[0].logprob, t.logprob);
        for (let i = 1; i < top; i++) assert.ok(t.top_logprobs[i - 1].logprob >= t.top_logprobs[i].logprob, 'alternatives in order');
    }
}

test('logprobs: each token with its log-probability and top_logprobs alternatives, streamed or not', OPTS, async () => {
    const req = { model, messages: [USER], max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3 };
    const r = await client.chat.completions.create(req);
    checkChatLogprobs(r.choices[0].logprobs.content, r.usage.completion_tokens, 3);
    const { chunks } = await collectChat(await client.chat.completions.create({ ...req, stream: true }));
    const streamed = chunks.flatMap((c) => c.choices?.[0]?.logprobs?.content ?? []);
    assert.deepEqual(streamed, r.choices[0].logprobs.content, 'streamed logprobs differ from the unstreamed ones');
    const plain = await client.chat.completions.create({ model, messages: [USER], max_tokens: 4, temperature: 0 });
    assert.equal(plain.choices[0].logprobs, null, 'logprobs without asking');
    await expectError(client.chat.completions.create({ ...req, top_logprobs: 21 }), 400, OpenAI.BadRequestError, /top_logprobs/);
    // The legacy completions API: "logprobs": N alternatives, as parallel lists.
    const c = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, logprobs: 2 });
    const lp = c.choices[0].logprobs;
    assert.equal(lp.tokens.length, c.usage.completion_tokens);
    assert.equal(lp.token_logprobs.length, lp.tokens.length);
    assert.equal(lp.top_logprobs.length, lp.tokens.length);
    for (let i = 0; i < lp.tokens.length; i++) {
        assert.ok(lp.token_logprobs[i] <= 0);
        assert.equal(lp.top_logprobs[i][lp.tokens[i]], lp.token_logprobs[i], 'greedy: the token is among its alternatives');
    }
});

test('a prompt longer than the context is refused with 400', OPTS, async () => {
    const huge = { role: 'user', content: 'hearth '.repeat(30000).slice(0, 200000) };
    await expectError(client.chat.completions.create({ model, messages: [huge], max_tokens: 4 }), 400, OpenAI.BadRequestError);
    await expectError(client.chat.completions.create({ model, messages: [huge], max_tokens: 4, stream: true }), 400, OpenAI.BadRequestError);
});

test('an unknown path is 404 with an error in OpenAI\'s shape', OPTS, async () => {
    await expectError(client.get('/nope'), 404, OpenAI.NotFoundError);
});

test('a wrong or missing API key is 401', { ...OPTS, skip: API_KEY ? false : 'the server has no API key (no --api-key)' }, async () => {
    const wrong = makeClient('wrong-' + API_KEY);
    await expectError(wrong.models.list(), 401, OpenAI.AuthenticationError);
    await expectError(wrong.chat.completions.create({ model, messages: [USER], max_tokens: 4 }), 401, OpenAI.AuthenticationError);
    // The client always sends a key; without one at all:
    const res = await fetch(BASE + '/v1/models');
    assert.equal(res.status, 401);
    const body = await res.json();
    assert.equal(typeof body.error?.message, 'string');
});

test('the stream is server-sent events: data: lines, blank lines between, data: [DONE] last', OPTS, async () => {
    const res = await fetch(BASE + '/v1/chat/completions', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...(API_KEY ? { Authorization: `Bearer ${API_KEY}` } : {}) },
        body: JSON.stringify({ model, messages: [USER], temperature: 0, max_tokens: 4, stream: true }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const raw = await res.text();
    assert.ok(raw.endsWith('data: [DONE]\n\n'), `the stream ends with ${JSON.stringify(raw.slice(-40))}`);
    const events = raw.split('\n\n').slice(0, -1);
    for (const e of events) {
        assert.match(e, /^data: /, `an event that is not a data: line: ${JSON.stringify(e.slice(0, 80))}`);
        assert.ok(!e.includes('\n'), `an event of several lines: ${JSON.stringify(e.slice(0, 80))}`);
        if (e !== 'data: [DONE]') JSON.parse(e.slice(6));
    }
    assert.equal(events.filter((e) => e === 'data: [DONE]').length, 1);
});
