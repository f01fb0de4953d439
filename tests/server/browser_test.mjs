#!/usr/bin/env node
// The chat page (server/chat_page.html) in a real headless browser: Debian's chromium,
// driven through chromedriver's WebDriver HTTP API with Node's own fetch (no packages).
//
// Usage: node tests/server/browser_test.mjs --url http://127.0.0.1:PORT [--api-key KEY]
//                                            [--timeout SECONDS] [--screenshot DIR]
// The caller starts the server (./run MODEL --server --port PORT, or for developing the
// page tests/server/mock_server.mjs). One line per check, then "N passed, N failed".
// Exit code: 0 all passed, 1 a check failed or the browser could not be driven,
// 2 bad usage, 77 chromium or chromedriver is not installed (the test could not run).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const EXIT_CANNOT_RUN = 77;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHROMEDRIVER = process.env.CHROMEDRIVER || '/usr/bin/chromedriver';

function option(name) {
    const i = process.argv.indexOf(name);
    if (i < 0) return undefined;
    if (i + 1 >= process.argv.length) usage(`${name} needs a value`);
    return process.argv[i + 1];
}
function usage(msg) {
    console.error(`browser_test: ${msg}\nusage: node tests/server/browser_test.mjs --url http://127.0.0.1:PORT [--api-key KEY] [--timeout SECONDS] [--screenshot DIR]`);
    process.exit(2);
}
const BASE = (option('--url') || process.env.HEARTH_URL || usage('--url is required')).replace(/\/+$/, '');
const API_KEY = option('--api-key') ?? process.env.HEARTH_API_KEY ?? '';
const TIMEOUT_MS = 1000 * Number(option('--timeout') ?? 60);
const SHOTS = option('--screenshot');

for (const [file, what] of [[CHROMIUM, 'chromium'], [CHROMEDRIVER, 'chromedriver']]) {
    try { fs.accessSync(file, fs.constants.X_OK); } catch {
        console.log(`SKIP: the browser test cannot run here: ${what} (${file}) is missing; apt-get install chromium chromium-driver`);
        process.exit(EXIT_CANNOT_RUN);
    }
}

// ---- WebDriver over HTTP ----
const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';
let driverUrl, session, driver, profileDir;

async function wd(method, p, body) {
    const res = await fetch(driverUrl + p, {
        method, headers: { 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS + 30000),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`WebDriver ${method} ${p}: ${json.value?.error}: ${String(json.value?.message).split('\n')[0]}`);
    return json.value;
}
const s = (p) => `/session/${session}${p}`;
const find = async (css) => { const v = await wd('POST', s('/element'), { using: 'css selector', value: css }); if (!v[ELEMENT]) throw new Error('find ' + css + ': ' + JSON.stringify(v)); return v[ELEMENT]; };
const click = async (css) => wd('POST', s(`/element/${await find(css)}/click`), {});
const type = async (css, text) => wd('POST', s(`/element/${await find(css)}/value`), { text });
const clear = async (css) => wd('POST', s(`/element/${await find(css)}/clear`), {});
// Runs fn in the page; pageMessages() there lists the conversation's messages.
function pageMessages() {
    return [...document.querySelectorAll('#conversation .message')].map((m) => ({
        role: m.classList.contains('user') ? 'user' : m.classList.contains('assistant') ? 'assistant' : '?',
        text: m.textContent, children: m.children.length, finish: m.dataset.finish ?? null,
    }));
}
const js = (fn, ...args) => wd('POST', s('/execute/sync'), { script: `${pageMessages}\nreturn (${fn}).apply(null, arguments)`, args });
const jsAsync = (fn, ...args) => wd('POST', s('/execute/async'), { script: `(${fn}).apply(null, arguments)`, args });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls fn() until it returns a truthy value; throws after the timeout with `what`.
async function waitFor(what, fn, ms = TIMEOUT_MS) {
    const end = Date.now() + ms;
    for (;;) {
        const v = await fn();
        if (v) return v;
        if (Date.now() > end) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
        await sleep(100);
    }
}

function freePort() {
    return new Promise((resolve, reject) => {
        const srv = net.createServer();
        srv.on('error', reject);
        srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
    });
}

async function startBrowser() {
    const port = await freePort();
    driverUrl = `http://127.0.0.1:${port}`;
    // Its own process group, so the browser it starts goes with it at the end.
    driver = spawn(CHROMEDRIVER, [`--port=${port}`], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let driverErr = '';
    driver.stderr.on('data', (d) => { driverErr += d; });
    await waitFor('chromedriver to answer /status', async () => {
        if (driver.exitCode !== null) throw new Error(`chromedriver exited (${driver.exitCode}): ${driverErr.trim()}`);
        try { return (await wd('GET', '/status')).ready; } catch { return false; }
    }, 20000);
    profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-browser-'));
    const caps = {
        browserName: 'chrome',
        'goog:chromeOptions': {
            binary: CHROMIUM,
            args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic',
                   '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
                   `--user-data-dir=${profileDir}`, '--window-size=1000,800',
                   // A name that is no loopback name and leads to this machine: another site's page.
                   '--host-resolver-rules=MAP foreign.example 127.0.0.1'],
        },
    };
    session = (await wd('POST', '/session', { capabilities: { alwaysMatch: caps } })).sessionId;
    await wd('POST', s('/timeouts'), { script: TIMEOUT_MS, pageLoad: 30000, implicit: 0 });
}

async function cleanup() {
    if (session) { try { await wd('DELETE', s('')); } catch { /* the browser may be gone */ } session = undefined; }
    if (driver && driver.exitCode === null) {
        const exited = new Promise((r) => driver.once('exit', r));
        try { process.kill(-driver.pid, 'SIGTERM'); } catch { /* already gone */ }
        await Promise.race([exited, sleep(3000)]);
        if (driver.exitCode === null) { try { process.kill(-driver.pid, 'SIGKILL'); } catch { /* gone */ } }
    }
    if (profileDir) { fs.rmSync(profileDir, { recursive: true, force: true }); profileDir = undefined; }
}

// ---- what the page shows ----
const sendText = () => js(() => document.getElementById('send').textContent.trim());
const messages = () => js(() => pageMessages());
const errorText = () => js(() => document.getElementById('error').textContent);

// Wraps the page's fetch to keep each chat request's body and headers, and watches the
// conversation to keep every length the newest assistant message had.
function instrument() {
    return js(() => {
        if (window.__rec) return;
        const rec = window.__rec = { requests: [], lengths: [] };
        const orig = window.fetch;
        window.fetch = async (url, opts = {}) => {
            const chat = String(url).includes('/chat/completions');
            if (chat) rec.requests.push({ headers: opts.headers || {}, body: JSON.parse(opts.body), button: document.getElementById('send').textContent.trim() });
            const res = await orig(url, opts);
            if (!chat || !res.ok || !res.body || !JSON.parse(opts.body).stream) return res;
            // The stream reaches the page one server-sent event at a time, 20 ms apart: on a
            // loaded machine the browser may read a short reply whole, in one read, and the page
            // could not show it grow however it is written.
            const reader = res.body.getReader();
            const body = new ReadableStream({
                async pull(controller) {
                    try {
                        const { done, value } = await reader.read();
                        if (done) return controller.close();
                        let from = 0;
                        for (let i = 0; i + 1 < value.length; i++) {
                            if (value[i] !== 10 || value[i + 1] !== 10) continue;
                            controller.enqueue(value.slice(from, i + 2));
                            from = i + 2;
                            await new Promise((r) => setTimeout(r, 20));
                        }
                        if (from < value.length) controller.enqueue(value.slice(from));
                    } catch (e) {
                        controller.error(e);
                    }
                },
                cancel(reason) { return reader.cancel(reason); },
            });
            return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
        };
        new MutationObserver(() => {
            const all = document.querySelectorAll('#conversation .message.assistant');
            const n = all.length ? all[all.length - 1].textContent.length : 0;
            if (rec.lengths[rec.lengths.length - 1] !== n) rec.lengths.push(n);
        }).observe(document.getElementById('conversation'), { childList: true, subtree: true, characterData: true });
    });
}
const recorded = () => js(() => { const r = window.__rec; const out = JSON.parse(JSON.stringify(r)); r.lengths = []; r.requests = []; return out; });

// Sends what is in #message (by clicking #send, or with Enter) and waits for the reply.
async function sendAndWait(how) {
    const before = (await messages()).length;
    if (how === 'enter') await type('#message', '\uE007'); else await click('#send');
    return waitFor('a finished reply (an assistant message with text, the button back to Send)', async () => {
        const { msgs, button, err } = await js(() => ({ msgs: pageMessages(), button: document.getElementById('send').textContent.trim(),
                                                        err: document.getElementById('error').textContent }));
        const last = msgs[msgs.length - 1];
        if (err) throw new Error(`the page shows an error: ${err}`);
        return msgs.length >= before + 2 && last.role === 'assistant' && last.text.trim() && button === 'Send' ? msgs : null;
    });
}

// A reverse proxy as people put one in front of a server (nginx's
// `location /hearth/ { proxy_pass http://127.0.0.1:PORT/; }`): requests under /hearth/ go to
// the server without the prefix; anything else is 404, so a page that leaves its prefix fails.
// Its port, and a function that closes it.
async function startPrefixProxy() {
    const target = new URL(BASE);
    const proxy = http.createServer((req, res) => {
        if (!req.url.startsWith('/hearth/')) { res.writeHead(404, { 'Content-Type': 'text/plain' }); res.end(`the proxy has nothing at ${req.url}`); return; }
        const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url.slice('/hearth'.length), headers: { ...req.headers, host: target.host } }, (r) => {
            res.writeHead(r.statusCode, r.headers);
            r.pipe(res);
        });
        up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
        req.pipe(up);
        res.on('close', () => up.destroy());
    });
    await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
    return { port: proxy.address().port, close: () => { proxy.closeAllConnections(); proxy.close(); } };
}

// A proxy whose server "goes away" in the middle of a streamed reply: requests under /cut/ go
// to the server; an answer of /v1/chat/completions is cut off (the connection dropped, no end
// of the chunked body) after its third chunk. Its port, and a function that closes it.
async function startCuttingProxy() {
    const target = new URL(BASE);
    const proxy = http.createServer((req, res) => {
        if (!req.url.startsWith('/cut/')) { res.writeHead(404); res.end(); return; }
        const path = req.url.slice('/cut'.length);
        const up = http.request({ host: target.hostname, port: target.port, method: req.method, path, headers: { ...req.headers, host: target.host } }, (r) => {
            res.writeHead(r.statusCode, r.headers);
            let chunks = 0;
            r.on('data', (d) => {
                res.write(d);
                if (path.startsWith('/v1/chat/completions') && ++chunks === 3) { up.destroy(); setTimeout(() => res.socket?.destroy(), 100); }
            });
            r.on('end', () => res.end());
        });
        up.on('error', () => {});
        req.pipe(up);
    });
    await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
    return { port: proxy.address().port, close: () => { proxy.closeAllConnections(); proxy.close(); } };
}

// ---- the checks ----
const results = [];
async function check(name, fn) {
    try {
        await fn();
        results.push(true);
        console.log(`ok - ${name}`);
    } catch (e) {
        results.push(false);
        console.log(`FAIL - ${name}: ${e.message}`);
    }
}
function expect(cond, msg) { if (!cond) throw new Error(msg); }
const json = (v) => JSON.stringify(v).slice(0, 300);
// Messages as [role, content] pairs: WebDriver hands objects back with their keys sorted.
const pairs = (msgs) => JSON.stringify((msgs || []).map((m) => [m.role, m.content]));

const SYSTEM = 'You are a helpful assistant. Answer briefly.';
const FIRST = 'Say hello <i>twice</i> & café';
const MAX_TOKENS = 32;

async function main() {
    await startBrowser();
    await wd('POST', s('/url'), { url: BASE + '/' });

    if (API_KEY) {
        await check('without the API key the page says the model list was refused', async () => {
            const err = await waitFor('#error to say something', errorText, 10000);
            expect(/401|key/i.test(err), `#error is "${err}"`);
        });
        await type('#api-key', API_KEY + '\uE004'); // Tab: the change event stores it and reloads the model
    }

    await check('#model shows the model name from /v1/models', async () => {
        const name = await waitFor('#model to show a name', async () => {
            const t = (await js(() => document.getElementById('model').textContent)).trim();
            return t && !['…', '(unknown)', '(none)'].includes(t) ? t : null;
        }, 20000);
        const res = await fetch(BASE + '/v1/models', { headers: API_KEY ? { Authorization: `Bearer ${API_KEY}` } : {} });
        const id = (await res.json()).data[0].id;
        expect(name === id, `#model is "${name}", /v1/models says "${id}"`);
    });

    await check('the controls have labels', async () => {
        const unlabelled = await js(() => ['message', 'system', 'temperature', 'max-tokens', 'api-key']
            .filter((id) => !document.getElementById(id).labels.length));
        expect(unlabelled.length === 0, `no <label> for ${unlabelled.join(', ')}`);
        expect(await js(() => document.getElementById('temperature').value) === '0.8', 'the temperature is not 0.8 at first');
    });

    await instrument();
    await type('#system', SYSTEM);
    await clear('#temperature');
    await type('#temperature', '0');
    await type('#max-tokens', String(MAX_TOKENS)); // bounds the time a real model takes

    let first;
    await check('a message sent with #send gets a streamed reply', async () => {
        await type('#message', FIRST);
        const msgs = await sendAndWait('click');
        first = msgs[msgs.length - 1];
        expect(msgs.length === 2 && msgs[0].role === 'user' && first.role === 'assistant', `messages: ${json(msgs)}`);
        expect(first.finish === 'stop' || first.finish === 'length', `the reply ended with "${first.finish}", not stop or length`);
    });
    const rec1 = await recorded();
    await check('the reply grew while it streamed', async () => {
        const partial = rec1.lengths.filter((n) => n > 0 && n < first.text.length);
        expect(partial.length >= 1, `lengths seen: ${json(rec1.lengths)}, final ${first?.text.length}`);
    });
    await check('#send was Stop while the reply streamed and is Send after', async () => {
        expect(rec1.requests[0]?.button === 'Stop', `the button said "${rec1.requests[0]?.button}" when the request went out`);
        expect(await sendText() === 'Send', `the button says "${await sendText()}"`);
    });
    await check('messages are shown as text, never as HTML', async () => {
        const msgs = await messages();
        expect(msgs[0].text === FIRST && msgs[0].children === 0, `user message: ${json(msgs[0])}`);
        expect(msgs[1].children === 0, `the reply has ${msgs[1].children} element(s) in it: ${json(msgs[1].text)}`);
    });
    await check('the request carries stream, the system prompt, temperature 0, max_tokens and the message', async () => {
        const r = rec1.requests[0];
        expect(r, 'no request was recorded');
        expect(r.body.stream === true, `stream is ${r.body.stream}`);
        expect(r.body.temperature === 0, `temperature is ${json(r.body.temperature)}`);
        expect(r.body.max_tokens === MAX_TOKENS, `max_tokens is ${json(r.body.max_tokens)}`);
        expect(pairs(r.body.messages) === pairs([{ role: 'system', content: SYSTEM }, { role: 'user', content: FIRST }]), `messages: ${json(r.body.messages)}`);
        const auth = r.headers.Authorization;
        expect(API_KEY ? auth === `Bearer ${API_KEY}` : auth === undefined, `Authorization: ${auth}`);
    });

    await check('Shift+Enter makes a new line and Enter sends; the second request carries the first turn', async () => {
        await type('#message', 'line one');
        await wd('POST', s('/actions'), { actions: [{ type: 'key', id: 'kb', actions: [
            { type: 'keyDown', value: '\uE008' }, { type: 'keyDown', value: '\uE007' },
            { type: 'keyUp', value: '\uE007' }, { type: 'keyUp', value: '\uE008' }] }] });
        await wd('DELETE', s('/actions'));
        await type('#message', 'line two');
        const value = await js(() => document.getElementById('message').value);
        expect(value === 'line one\nline two', `#message holds ${json(value)}`);
        expect((await messages()).length === 2, 'Shift+Enter sent the message');
        const msgs = await sendAndWait('enter');
        expect(msgs.length === 4 && msgs[2].text === 'line one\nline two', `messages: ${json(msgs)}`);
        const r = (await recorded()).requests[0];
        const want = [{ role: 'system', content: SYSTEM }, { role: 'user', content: FIRST },
                      { role: 'assistant', content: first.text }, { role: 'user', content: 'line one\nline two' }];
        expect(pairs(r?.body.messages) === pairs(want), `messages sent: ${json(r?.body.messages)}`);
    });

    await check('Stop ends a long reply and the partial reply stays', async () => {
        await clear('#max-tokens'); // no limit: the reply must still be going when Stop is pressed
        await type('#message', 'Tell me a long story about a fire in the hearth.');
        // Clicks Stop from inside the page as soon as the reply has text, so even a fast
        // server is stopped mid-reply.
        const atClick = await jsAsync((done) => {
            const conv = document.getElementById('conversation');
            const obs = new MutationObserver(() => {
                const all = conv.querySelectorAll('.message.assistant');
                const last = all[all.length - 1];
                if (all.length === 3 && last.textContent.length > 0) {
                    obs.disconnect();
                    const button = document.getElementById('send').textContent.trim();
                    document.getElementById('send').click();
                    done({ length: last.textContent.length, button });
                }
            });
            obs.observe(conv, { childList: true, subtree: true, characterData: true });
            document.getElementById('send').click();
        });
        expect(atClick.button === 'Stop', `the button said "${atClick.button}" while the reply streamed`);
        await waitFor('the button to be Send again', async () => await sendText() === 'Send', 10000);
        const msgs = await messages();
        const last = msgs[msgs.length - 1];
        expect(msgs.length === 6 && last.role === 'assistant', `messages: ${json(msgs)}`);
        expect(last.finish === 'aborted', `the reply ended with "${last.finish}" (it finished before Stop was clicked?)`);
        expect(last.text.length >= atClick.length && last.text.length > 0, `the partial reply is ${json(last.text)}, had ${atClick.length} characters at Stop`);
        await sleep(1000);
        const later = (await messages())[5];
        expect(later.text === last.text, 'the reply kept growing after Stop');
        expect(await errorText() === '', `#error says "${await errorText()}"`);
        await type('#max-tokens', String(MAX_TOKENS));
    });

    await check("an HTTP error shows the server's message, and the message goes back to the input box", async () => {
        const before = (await messages()).length;
        const long = 'hello '.repeat(40000); // 240,000 characters: more than any context
        await js((t) => { const m = document.getElementById('message'); m.value = t; m.dispatchEvent(new Event('input')); }, long);
        await click('#send');
        const shown = await waitFor('#error to show the error', errorText);
        // What the server says to the same request, asked directly.
        const body = (await recorded()).requests.pop()?.body;
        const res = await fetch(BASE + '/v1/chat/completions', {
            method: 'POST', body: JSON.stringify(body),
            headers: { 'Content-Type': 'application/json', ...(API_KEY ? { Authorization: `Bearer ${API_KEY}` } : {}) },
        });
        const said = await res.json();
        expect(res.status === 400, `the server answered ${res.status}`);
        expect(shown === said.error?.message, `#error is "${shown}", the server said ${json(said)}`);
        await waitFor('the button to be Send again', async () => await sendText() === 'Send', 10000);
        expect((await messages()).length === before, 'the failed turn stayed in the conversation');
        expect(await js(() => document.getElementById('message').value.length) === long.length, 'the message was not given back');
        await clear('#message');
    });

    await check('Stop before the first token takes the turn back, and the conversation goes on', async () => {
        const before = (await messages()).length;
        await type('#message', 'Stopped at once');
        // Send, then Stop in the same task: the request is aborted before any token can come.
        await js(() => { const b = document.getElementById('send'); b.click(); b.click(); });
        await waitFor('the button to be Send again', async () => await sendText() === 'Send', 10000);
        expect((await messages()).length === before, `the stopped turn stayed: ${json(await messages())}`);
        expect(await js(() => document.getElementById('message').value) === 'Stopped at once', 'the message was not given back');
        const msgs = await sendAndWait('click');
        expect(msgs.length === before + 2, `messages: ${json(msgs)}`);
        expect(await errorText() === '', `#error says "${await errorText()}"`);
        const sent = (await recorded()).requests.pop()?.body.messages || [];
        const roles = sent.filter((m) => m.role !== 'system').map((m) => m.role).join(' ');
        expect(/^(user assistant )*user$/.test(roles) && sent[sent.length - 1].content === 'Stopped at once',
               `messages sent: ${json(sent)}`);
    });

    await check('New conversation clears the dialog and keeps the system prompt and temperature', async () => {
        await click('#new-conversation');
        expect((await messages()).length === 0, 'messages are left');
        expect(await errorText() === '', `#error still says "${await errorText()}"`);
        expect(await js(() => document.getElementById('system').value) === SYSTEM, 'the system prompt changed');
        expect(await js(() => document.getElementById('temperature').value) === '0', 'the temperature changed');
    });

    await check('after Send is clicked, typing goes on in the message box', async () => {
        // A clicked button keeps the focus, and Enter or Space on a focused button presses it
        // (HTML's activation behaviour): focus left on Send, which turns into Stop, made the next
        // Enter stop the reply, and the next words typed went nowhere (the message box keeps the
        // focus after a message is sent in llama-server's web UI and ChatGPT's).
        await type('#message', 'Focus after a click');
        await click('#send');
        const afterSend = await js(() => document.activeElement && document.activeElement.id);
        await waitFor('the button to be Send again', async () => await sendText() === 'Send', 20000);
        expect(await errorText() === '', `#error says "${await errorText()}"`);
        await click('#new-conversation');
        expect(afterSend === 'message', `the focus is on #${afterSend} after Send was clicked`);
    });

    await check('in a narrow window nothing overflows sideways, and a new conversation starts afresh', async () => {
        await wd('POST', s('/window/rect'), { width: 360, height: 700 });
        await sleep(300);
        const fit = await js(() => {
            const b = document.getElementById('send').getBoundingClientRect();
            const m = document.getElementById('message').getBoundingClientRect();
            return { scroll: document.documentElement.scrollWidth, width: window.innerWidth, height: window.innerHeight,
                     right: Math.max(b.right, m.right), bottom: Math.max(b.bottom, m.bottom) };
        });
        expect(fit.scroll <= fit.width && fit.right <= fit.width, `page ${fit.scroll}px wide, #send and #message end at ${fit.right}px, window ${fit.width}px`);
        expect(fit.bottom <= fit.height, `#send and #message end at ${fit.bottom}px, below the window's ${fit.height}px`);
        await type('#message', 'Hi again');
        const msgs = await sendAndWait('click');
        expect(msgs.length === 2, `messages: ${json(msgs)}`);
        const r = (await recorded()).requests.pop();
        expect(pairs(r?.body.messages) === pairs([{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Hi again' }]), `messages sent: ${json(r?.body.messages)}`);
    });

    if (SHOTS) {
        fs.mkdirSync(SHOTS, { recursive: true });
        fs.writeFileSync(path.join(SHOTS, 'chat_page_narrow.png'), Buffer.from(await wd('GET', s('/screenshot')), 'base64'));
        await wd('POST', s('/window/rect'), { width: 1000, height: 800 });
        await sleep(300);
        fs.writeFileSync(path.join(SHOTS, 'chat_page_wide.png'), Buffer.from(await wd('GET', s('/screenshot')), 'base64'));
    }

    const cutting = await startCuttingProxy();
    try {
        await check('when the server goes away in the middle of a reply, the page says so and the partial reply is marked incomplete', async () => {
            await wd('POST', s('/window/rect'), { width: 1000, height: 800 });
            await wd('POST', s('/url'), { url: `http://127.0.0.1:${cutting.port}/cut/` });
            if (API_KEY) await type('#api-key', API_KEY + '\uE004');
            await clear('#max-tokens');
            await type('#max-tokens', '200');
            await type('#message', 'A reply that is cut off');
            await click('#send');
            await waitFor('the button to be Send again', async () => await sendText() === 'Send', 20000);
            const shown = await js(() => ({ err: document.getElementById('error').textContent, msgs: pageMessages(),
                after: [...document.querySelectorAll('#conversation .message.assistant')].map((m) => getComputedStyle(m, '::after').content) }));
            // The error line goes at the next message; the reply must still say it is not whole,
            // as a stopped one says "(stopped)": a stream without a finish_reason is a reply cut
            // short (OpenAI's streaming: the last chunk carries finish_reason).
            expect(/^The reply failed/.test(shown.err), `#error says ${json(shown.err)}`);
            const last = shown.msgs[shown.msgs.length - 1];
            expect(shown.msgs.length === 2 && last.role === 'assistant' && last.text.length > 0, `messages: ${json(shown.msgs)}`);
            expect(/incomplete/.test(shown.after[0]), `the cut reply is marked ${json(shown.after[0])}`);
        });
    } finally {
        cutting.close();
    }

    // The page's requests go where the page came from, also under a proxy's path prefix (as
    // llama-server's web UI asks for ./v1/...), and a page on another origin is let in only
    // when it is on this machine's loopback names (hearth's default --cors-origins).
    const proxy = await startPrefixProxy();
    try {
        await wd('POST', s('/window/rect'), { width: 1000, height: 800 });
        for (const origin of [`http://localhost:${proxy.port}`, `http://foreign.example:${proxy.port}`]) {
            await check(`behind a reverse proxy at ${origin}/hearth/ the page lists the model and gets a reply`, async () => {
                await wd('POST', s('/url'), { url: origin + '/hearth/' });
                if (API_KEY) await type('#api-key', API_KEY + '\uE004');
                await waitFor('#model to show a name', async () => {
                    const t = (await js(() => document.getElementById('model').textContent)).trim();
                    const err = await errorText();
                    if (err) throw new Error(`the page shows an error: ${err}`);
                    return t && !['…', '(unknown)', '(none)'].includes(t) ? t : null;
                }, 20000);
                await clear('#max-tokens');
                await type('#max-tokens', String(MAX_TOKENS));
                await type('#message', 'Hello through the proxy');
                const msgs = await sendAndWait('click');
                expect(msgs.length === 2, `messages: ${json(msgs)}`);
            });
        }
        const callServer = () => jsAsync((url, key, done) => {
            fetch(url + '/v1/chat/completions', { method: 'POST',
                headers: { 'Content-Type': 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) },
                body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, stream: true }) })
                .then(async (r) => done({ status: r.status, text: await r.text() }), (e) => done({ error: String(e) }));
        }, BASE, API_KEY);
        await check('a page on a loopback origin may call the server across origins (CORS), streamed', async () => {
            await wd('POST', s('/url'), { url: `http://localhost:${proxy.port}/hearth/` });
            const r = await callServer();
            expect(r.status === 200 && /data: \[DONE\]/.test(r.text), `the page got ${json(r)}`);
        });
        await check("another site's page may not (its browser refuses it the answer)", async () => {
            await wd('POST', s('/url'), { url: `http://foreign.example:${proxy.port}/hearth/` });
            const r = await callServer();
            expect(r.error && r.status === undefined, `the page got ${json(r)}`);
        });
    } finally {
        proxy.close();
    }
}

let status = 0;
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { cleanup().finally(() => process.exit(1)); });
process.stdout.on('error', () => {}); // a closed pipe must not skip the cleanup
// Last resort, whatever ends the process: the browser and its profile do not outlive it.
process.on('exit', () => {
    if (driver && driver.exitCode === null) { try { process.kill(-driver.pid, 'SIGKILL'); } catch { /* gone */ } }
    if (profileDir) fs.rmSync(profileDir, { recursive: true, force: true });
});
try {
    await main();
} catch (e) {
    console.log(`FAIL - the browser test could not go on: ${e.message}`);
    results.push(false);
} finally {
    await cleanup();
}
const passed = results.filter(Boolean).length, failed = results.length - passed;
console.log(`${passed} passed, ${failed} failed`);
if (failed || passed === 0) status = 1;
process.exit(status);
