#!/usr/bin/env node
// A mock of hearth's OpenAI-compatible server, with no model behind it.
//
// It exists to develop and test the chat page's streaming logic (server/chat_page.html)
// and the test scripts beside it without a model or the C++ server. The real tests run
// against `./run MODEL --server`; nothing here defines what that server must do.
//
// It serves the page at /, GET /v1/models, POST /v1/chat/completions and /v1/completions
// (plain JSON or server-sent events), in OpenAI's shapes. A "token" is a word. The reply
// is made up: greedy (temperature 0) it depends only on the prompt; sampled it depends on
// `seed`. A message that contains "long" gets a reply of 300 tokens. Tokens stream
// `--delay` ms apart, each event written in two pieces split inside a UTF-8 character
// where there is one, so the page's parser meets split lines and split characters.
//
// Usage: node tests/server/mock_server.mjs [--port N] [--api-key KEY] [--delay MS]
// Prints "listening on http://127.0.0.1:PORT" once it listens (--port 0: a free port).
import http from 'node:http';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const arg = (name, def) => {
    const i = process.argv.indexOf(name);
    return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
};
const PORT = Number(arg('--port', 8080));
const API_KEY = arg('--api-key', '');
const DELAY = Number(arg('--delay', 50));
const MODEL = 'mock-model';
const CONTEXT = 4096; // tokens; a prompt estimated longer than this is refused
const PAGE = fileURLToPath(new URL('../../server/chat_page.html', import.meta.url));

const WORDS = ('the a hearth fire warm light small model runs on every core of the machine and ' +
    'writes one word at a time <b>not bold</b> & café naïve ☕ 🔥 déjà vu').split(' ');

// mulberry32: a small seeded PRNG, so a seed gives the same words each time.
function rng(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = Math.imul(a ^ (a >>> 15), 1 | a);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}
const hash = (s) => { let h = 2166136261; for (const c of s) h = Math.imul(h ^ c.codePointAt(0), 16777619); return h >>> 0; };
const countTokens = (s) => Math.ceil(s.length / 4);

// The tokens of the reply to `prompt`, before max_tokens and stop are applied.
function makeReply(prompt, temperature, seed) {
    const n = /long/i.test(prompt) ? 300 : 24;
    const rand = temperature === 0 ? rng(hash(prompt)) : rng(seed ?? Math.floor(Math.random() * 2 ** 32));
    // Markup and multi-byte characters first: the page must show them as text.
    const toks = ['Hello!', ' <b>not', ' bold</b>', ' &amp;', ' café', ' ☕'];
    while (toks.length < n) toks.push(' ' + WORDS[Math.floor(rand() * WORDS.length)]);
    return toks;
}

function sendJSON(res, status, obj) {
    const body = JSON.stringify(obj);
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
}
function sendError(res, status, message, type = 'invalid_request_error', param = null, code = null) {
    sendJSON(res, status, { error: { message, type, param, code } });
}

// The request's error, in OpenAI's shape, or null. The checks a real server makes too.
function validate(body, chat) {
    if (body.n !== undefined && body.n !== 1) return ['n must be 1: one choice per request', 'n'];
    if (chat && body.tools !== undefined) return ['tools are not supported', 'tools'];
    if (chat && body.tool_choice !== undefined) return ['tool_choice is not supported', 'tool_choice'];
    if (body.logprobs) return ['logprobs are not supported', 'logprobs'];
    if (chat) {
        if (!Array.isArray(body.messages) || body.messages.length === 0) return ['messages must be a non-empty array', 'messages'];
        for (const m of body.messages) {
            if (!m || !['system', 'user', 'assistant', 'developer'].includes(m.role) || typeof m.content !== 'string')
                return ['each message needs a role (system, developer, user, assistant) and string content', 'messages'];
        }
    } else if (typeof body.prompt !== 'string') return ['prompt must be a string', 'prompt'];
    const t = body.temperature ?? 1;
    if (typeof t !== 'number' || t < 0 || t > 2) return ['temperature must be a number from 0 to 2', 'temperature'];
    for (const k of ['max_tokens', 'max_completion_tokens']) {
        if (body[k] !== undefined && body[k] !== null && !(Number.isInteger(body[k]) && body[k] > 0)) return [`${k} must be a positive integer`, k];
    }
    if (body.stop !== undefined && body.stop !== null && typeof body.stop !== 'string' &&
        !(Array.isArray(body.stop) && body.stop.length <= 4 && body.stop.every((s) => typeof s === 'string')))
        return ['stop must be a string or a list of at most 4 strings', 'stop'];
    return null;
}

let nextId = 1;
function complete(req, res, body, chat) {
    const bad = validate(body, chat);
    if (bad) return sendError(res, 400, bad[0], 'invalid_request_error', bad[1]);
    const prompt = chat ? body.messages.map((m) => `<|${m.role}|>\n${m.content}\n`).join('') + '<|assistant|>\n' : body.prompt;
    const promptTokens = countTokens(prompt);
    const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? (CONTEXT - promptTokens);
    if (promptTokens + 1 > CONTEXT)
        return sendError(res, 400, `the prompt is ${promptTokens} tokens, more than the context of ${CONTEXT}`,
            'invalid_request_error', chat ? 'messages' : 'prompt', 'context_length_exceeded');
    const lastUser = chat ? [...body.messages].reverse().find((m) => m.role === 'user')?.content ?? '' : prompt;
    let toks = makeReply(chat ? lastUser + prompt : prompt, body.temperature ?? 1, body.seed);
    let finish = 'stop';
    if (toks.length > maxTokens) { toks = toks.slice(0, maxTokens); finish = 'length'; }
    // Stop strings: the text ends before the first one, and the tokens are cut to match.
    const stops = body.stop == null ? [] : [].concat(body.stop).filter((s) => s !== '');
    const full = toks.join('');
    let cut = -1;
    for (const s of stops) { const i = full.indexOf(s); if (i >= 0 && (cut < 0 || i < cut)) cut = i; }
    if (cut >= 0) {
        finish = 'stop';
        const kept = []; let len = 0;
        for (const t of toks) { if (len + t.length > cut) { if (cut > len) kept.push(t.slice(0, cut - len)); break; } kept.push(t); len += t.length; }
        toks = kept; // the usage still counts the tokens generated, up to the one the stop text ended in
    }
    const usage = { prompt_tokens: promptTokens, completion_tokens: toks.length, total_tokens: promptTokens + toks.length };
    const id = (chat ? 'chatcmpl-' : 'cmpl-') + nextId++;
    const created = Math.floor(Date.now() / 1000);
    const object = chat ? 'chat.completion' : 'text_completion';
    if (!body.stream) {
        const text = toks.join('');
        const choice = chat ? { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish }
                            : { index: 0, text, logprobs: null, finish_reason: finish };
        return sendJSON(res, 200, { id, object, created, model: MODEL, choices: [choice], usage });
    }
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    const withUsage = body.stream_options?.include_usage === true;
    const chunk = (delta, fin, text) => ({
        id, object: chat ? 'chat.completion.chunk' : 'text_completion', created, model: MODEL,
        choices: [chat ? { index: 0, delta, logprobs: null, finish_reason: fin } : { index: 0, text, logprobs: null, finish_reason: fin }],
        ...(withUsage ? { usage: null } : {}),
    });
    const events = [];
    if (chat) events.push(chunk({ role: 'assistant', content: '' }, null));
    for (const t of toks) events.push(chat ? chunk({ content: t }, null) : chunk(undefined, null, t));
    events.push(chat ? chunk({}, finish) : chunk(undefined, finish, ''));
    if (withUsage) events.push({ id, object: chat ? 'chat.completion.chunk' : 'text_completion', created, model: MODEL, choices: [], usage });
    const lines = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).concat(['data: [DONE]\n\n']);
    let i = 0, closed = false;
    res.on('close', () => { closed = true; });
    const step = () => {
        if (closed) return;
        if (i === lines.length) return res.end();
        const buf = Buffer.from(lines[i++]);
        // Split inside a multi-byte character where there is one, else in the middle.
        let at = buf.findIndex((b) => b >= 0x80);
        at = at > 0 ? at + 1 : buf.length >> 1;
        res.write(buf.subarray(0, at));
        setTimeout(() => { if (!closed) { res.write(buf.subarray(at)); setTimeout(step, DELAY); } }, 5);
    };
    step();
}

const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/' || url.pathname === '/index.html') {
        if (req.method !== 'GET' && req.method !== 'HEAD') return sendError(res, 405, 'method not allowed');
        const page = fs.readFileSync(PAGE);
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': page.length });
        return res.end(req.method === 'HEAD' ? undefined : page);
    }
    // CORS as hearth's default --cors-origins has it: pages on loopback names only; a
    // preflight, which carries no key, answered before the key is asked for.
    const origin = req.headers.origin;
    if (origin) {
        res.setHeader('Vary', 'Origin');
        let host = '';
        try { host = new URL(origin).hostname; } catch { /* "null" */ }
        if (/^https?:\/\//.test(origin) && (host === 'localhost' || host.endsWith('.localhost') || host === '127.0.0.1' || host === '[::1]'))
            res.setHeader('Access-Control-Allow-Origin', origin);
    }
    if (req.method === 'OPTIONS') {
        res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, POST, OPTIONS');
        if (req.headers['access-control-request-headers']) res.setHeader('Access-Control-Allow-Headers', req.headers['access-control-request-headers']);
        res.writeHead(204);
        return res.end();
    }
    if (API_KEY && req.headers.authorization !== `Bearer ${API_KEY}`)
        return sendError(res, 401, 'Incorrect API key provided', 'invalid_request_error', null, 'invalid_api_key');
    // As hearth: the paths work without /v1 too, and /v1/models/ID is the one model.
    const pathname = url.pathname.replace(/^\/v1\//, '/');
    const modelObject = { id: MODEL, object: 'model', created: 0, owned_by: 'hearth' };
    if (req.method === 'GET' && pathname.startsWith('/models/')) {
        if (decodeURIComponent(pathname.slice('/models/'.length)) === MODEL) return sendJSON(res, 200, modelObject);
        return sendError(res, 404, 'no such model', 'invalid_request_error', 'model', 'model_not_found');
    }
    const routes = { '/models': 'GET', '/chat/completions': 'POST', '/completions': 'POST' };
    if (!routes[pathname]) return sendError(res, 404, `unknown path ${url.pathname}`, 'invalid_request_error', null, 'not_found');
    if (req.method !== routes[pathname]) return sendError(res, 405, `${url.pathname} takes ${routes[pathname]}`);
    if (pathname === '/models') return sendJSON(res, 200, { object: 'list', data: [modelObject] });
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
        let body;
        try { body = JSON.parse(Buffer.concat(parts).toString('utf8')); } catch { return sendError(res, 400, 'the body is not valid JSON'); }
        if (!body || typeof body !== 'object' || Array.isArray(body)) return sendError(res, 400, 'the body must be a JSON object');
        complete(req, res, body, pathname === '/chat/completions');
    });
});
server.listen(PORT, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
