#!/usr/bin/env python3
"""llama-server's renderings of the real chat templates, for tests/chat/test_chat_goldens.cpp.

For each template family: a small GGUF carrying the model's published Jinja template in
tokenizer.chat_template and the family's vocabulary, served by `llama-server --jinja`; a seeded set
of dialogs, each sent to POST /apply-template (the prompt text llama-server renders for
/v1/chat/completions) and the text to POST /tokenize with add_special and parse_special true (the
prompt ids /v1/chat/completions evaluates). Writes tests/data/chat_goldens.json:

  {"families": {NAME: {"template": built-in name, "jinja": file under tests/data/, "vocab": "llama2" |
                       "llama3" | "qwen3", "special": {text: id} of the markers the dialogs use,
                       "cases": [{"dialog": [{"role", "content"}], "text", "ids",
                                  "ids_text_markers"}]}}}

`ids_text_markers`, only for a dialog whose contents hold the text of a special token (llama-server
parses special tokens in the whole prompt, so a user's "<|eot_id|>" ends the turn; hearth keeps a
message's text text): the prompt's ids with those texts as text, from llama-server's tokenizer
(text_marker_ids, checked on every other dialog to give llama-server's own ids).

Vocabularies: Llama-2's SentencePiece model (Llama-2-chat, TinyLlama-Chat, and Mistral-7B-Instruct,
whose own 32000-piece vocabulary has the same special tokens) from tests/data/gguf-mini's
mini-F16.gguf, its template set by gguf-py; Llama-3's and Qwen3's tokenizer.json (tests/data/bpe/)
in a zero-weight Llama converted by hearth's quantize (build it first). Run from the repository
root:

  LLAMA_CPP=../peers/llama.cpp /usr/bin/python3 tests/reference/make_chat_goldens.py

Needs llama.cpp built (LLAMA_CPP/build/bin/llama-server) and its gguf-py; numpy. Ports 18410...
Deterministic: the dialogs come from fixed seeds; llama-server's rendering has no randomness.
"""
import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

LLAMA_CPP = os.environ.get("LLAMA_CPP", "../peers/llama.cpp")
BIN = os.path.join(LLAMA_CPP, "build", "bin")
PORT0 = int(os.environ.get("PORT", "18410"))

MARKERS_SPM = ["</s>", "<s>", "[INST]", "[/INST]", "<<SYS>>", "<|user|>", "<|assistant|>"]
MARKERS_LLAMA3 = ["<|reserved_special_token_5|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|begin_of_text|>", "<|im_end|>", "[INST]"]
MARKERS_QWEN = ["<|im_end|>", "<|im_start|>", "<|endoftext|>", "<|eot_id|>", "</s>"]

# name: (built-in template, jinja file, vocabulary, markers, system messages after the first, prefill
# after the system message alone, think blocks in replies, a system message first, chat_template_kwargs)
# Mistral-7B-Instruct-v0.2's Jinja raises an error for a system message (llama-server then writes it
# into the first user message followed by "\n", its own fallback, not the model's): none here.
# Qwen3's is rendered with thinking off, as hearth's qwen3 template is.
FAMILIES = {
    "llama2": ("llama2", "chat/Llama-2-7b-chat-hf.jinja", "llama2", MARKERS_SPM, False, False, False, True, {}),
    "mistral": ("mistral", "chat/Mistral-7B-Instruct-v0.2.jinja", "llama2", MARKERS_SPM, False, False, False, False, {}),
    "zephyr": ("zephyr", "chat/TinyLlama-1.1B-Chat-v1.0.jinja", "llama2", MARKERS_SPM, True, True, False, True, {}),
    "llama3": ("llama3", "bpe/llama3-tokenizer_config.json", "llama3", MARKERS_LLAMA3, True, True, False, True, {}),
    "llama3.1": ("llama3.1", "chat/Llama-3.1-8B-Instruct.jinja", "llama3", MARKERS_LLAMA3, True, True, False, True,
                 {"date_string": "26 Jul 2024"}),
    "chatml": ("chatml", "chat/Qwen2.5-7B-Instruct.jinja", "qwen3", MARKERS_QWEN, True, True, False, True, {}),
    "qwen3": ("qwen3", "bpe/qwen3-tokenizer_config.json", "qwen3", MARKERS_QWEN, True, True, True, True,
              {"enable_thinking": False}),
}
CASES_PER_FAMILY = 60

WORDS = ("the ship sails at dawn and every sailor knows the sea is wide hello what why how many "
         "apples are there in a barrel tell me a story about a cat").split()


def jinja_text(rel):
    text = open(os.path.join("tests/data", rel), encoding="utf-8").read()
    if rel.endswith(".json"):
        return json.loads(text)["chat_template"]
    return text


def sentence(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))).capitalize() + rng.choice([".", "?", "!", ""])


def content(rng, markers, nfd):
    s = sentence(rng)
    kind = rng.randrange(18)
    if kind == 0:
        return ""
    if kind == 1:
        return "  " + s + "  "
    if kind == 2:
        return "\n" + s + "\n\n"
    if kind == 3:
        return s + "\n"
    if kind == 4:
        return "Grüße, 世界! 🙂 naïve café — ½ " + s
    if kind == 5:
        return s + " " + rng.choice(markers) + " " + sentence(rng)
    if kind == 6:
        return rng.choice(markers) + s
    if kind == 7:
        return s + "\nline two\n\nline four"
    if kind == 8:
        return "\t" + s + " \t"
    if kind == 9:
        return " "
    if kind == 12:
        return s + "\r\n" + s
    if kind == 13:
        # Decomposed accents, where the vocabulary has no normalizer: Qwen's tokenizer.json normalizes
        # to NFC, as hearth does, and llama.cpp does not (its ids differ; quantize warns of it).
        return ("Cafe\u0301 nai\u0308ve " if nfd else "Café naïve ") + s
    if kind == 14:
        return "<think>\n" + s + "\n</think>\n\n" + s
    if kind == 15:
        return "   \n   " + s + " 1234567 3.14159 \n\n\n"
    if kind == 16:
        return rng.choice(markers) + " <|im_start|>system\n" + s
    if kind == 17:
        return "\u00a0" + s + "\u3000"
    return s


def dialog(rng, fam):
    _, _, vocab, markers, mid_system, prefill_after_system, think, first_system, _ = fam
    nfd = vocab != "qwen3"
    msgs = []
    if first_system and rng.random() < 0.5:
        msgs.append({"role": "system", "content": content(rng, markers, nfd)})
    n = rng.randint(1, 6)
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        if role == "user" and mid_system and i > 0 and rng.random() < 0.2:
            msgs.append({"role": "system", "content": content(rng, markers, nfd)})
        c = content(rng, markers, nfd)
        if role == "assistant" and think and rng.random() < 0.4:
            c = "<think>\n" + sentence(rng) + "\n</think>\n\n" + c
        msgs.append({"role": role, "content": c})
    # End with the user's message (a generation prompt) or with a reply begun (a prefill).
    if msgs[-1]["role"] == "assistant" and rng.random() < 0.5:
        msgs.pop()
    elif msgs[-1]["role"] == "user" and rng.random() < 0.25:
        msgs.append({"role": "assistant", "content": content(rng, markers, nfd)})
    if prefill_after_system and rng.random() < 0.03:
        msgs = [{"role": "system", "content": sentence(rng)}, {"role": "assistant", "content": " " + sentence(rng)}]
    # A reply begun is not empty: llama-server drops an empty last assistant message and renders the
    # dialog before it without a generation prompt; hearth continues it as a reply begun, after the
    # generation prompt (the Jinja does not say; transformers renders the empty turn closed).
    if msgs[-1]["role"] == "assistant" and not msgs[-1]["content"]:
        msgs[-1]["content"] = sentence(rng)
    return msgs


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


KWARGS = {}


def render(port, msgs):
    text = post(port, "/apply-template", {"messages": msgs, "chat_template_kwargs": KWARGS})["prompt"]
    ids = post(port, "/tokenize", {"content": text, "add_special": True, "parse_special": True})["tokens"]
    return text, ids


def text_marker_ids(port, msgs, special, bos):
    """The prompt's ids when the special tokens' texts inside the contents stay text: the dialog is
    rendered with each such marker replaced by a placeholder (private-use characters, which no
    template touches), the text split at the special tokens the template wrote, each piece between
    them tokenized alone (parse_special false, as llama.cpp tokenizes the fragments between special
    tokens) after the placeholders are put back."""
    order = sorted(special, key=len, reverse=True)
    holders = {}

    def hide(c):
        for k, s in enumerate(order):
            c = c.replace(s, "\ue000%d\ue001" % k)
        return c

    text = post(port, "/apply-template", {"messages": [{"role": m["role"], "content": hide(m["content"])} for m in msgs],
                                          "chat_template_kwargs": KWARGS})["prompt"]
    ids, at = list(bos), 0
    while at <= len(text):
        hits = [(text.find(s, at), -len(s), s) for s in order if text.find(s, at) >= 0]
        end = min(hits)[0] if hits else len(text)
        piece = text[at:end]
        for k, s in enumerate(order):
            piece = piece.replace("\ue000%d\ue001" % k, s)
        if piece:
            ids += post(port, "/tokenize", {"content": piece, "add_special": False, "parse_special": False})["tokens"]
        if not hits:
            break
        ids.append(special[min(hits)[2]])
        at = end + len(min(hits)[2])
    return ids


def write_zero_safetensors(path, tensors):
    header, offset = {}, 0
    for name, shape in tensors:
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        f.write(b"\0" * offset)


def bpe_gguf(work, vocab_name, jinja):
    """A one-layer zero-weight Llama with the real tokenizer.json, as hearth's tests make it."""
    rows = {"llama3": 128256, "qwen3": 151936}[vocab_name]
    d = os.path.join(work, vocab_name + "-hf")
    os.makedirs(d, exist_ok=True)
    hidden, inter, p = 32, 64, "model.layers.0."
    t = [("model.embed_tokens.weight", [rows, hidden]), ("model.norm.weight", [hidden])]
    t += [(p + n, [hidden]) for n in ("input_layernorm.weight", "post_attention_layernorm.weight")]
    t += [(p + "self_attn." + n + "_proj.weight", [hidden, hidden]) for n in "qkvo"]
    t += [(p + "mlp.gate_proj.weight", [inter, hidden]), (p + "mlp.up_proj.weight", [inter, hidden]),
          (p + "mlp.down_proj.weight", [hidden, inter])]
    write_zero_safetensors(os.path.join(d, "model.safetensors"), t)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
           "intermediate_size": inter, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": rows,
           "max_position_embeddings": 4096, "tie_word_embeddings": True}
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    subprocess.run(f"xz -dc tests/data/bpe/{vocab_name}-tokenizer.json.xz > {d}/tokenizer.json", shell=True, check=True)
    tc = json.load(open(f"tests/data/bpe/{vocab_name}-tokenizer_config.json"))
    tc["chat_template"] = jinja
    json.dump(tc, open(os.path.join(d, "tokenizer_config.json"), "w"))
    out = os.path.join(work, vocab_name + "-" + hashlib.md5(jinja.encode()).hexdigest()[:8] + ".gguf")
    subprocess.run(["./quantize", d, out, "-q"], check=True)
    return out


def spm_gguf(work, jinja):
    base = os.path.join(work, "mini.gguf")
    if not os.path.exists(base):
        subprocess.run(f"xz -dc tests/data/gguf-mini/mini-F16.gguf.xz > {base}", shell=True, check=True)
    out = os.path.join(work, "spm-" + hashlib.md5(jinja.encode()).hexdigest()[:8] + ".gguf")
    # gguf-py's script imports tqdm only for its progress bar.
    stub = os.path.join(work, "stub")
    os.makedirs(stub, exist_ok=True)
    open(os.path.join(stub, "tqdm.py"), "w").write(
        "class tqdm:\n    def __init__(s, it=None, *a, **k): s.it = it\n    def __iter__(s): return iter(s.it)\n"
        "    def update(s, *a): pass\n    def close(s): pass\n    def __enter__(s): return s\n"
        "    def __exit__(s, *a): pass\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(LLAMA_CPP, "gguf-py") + ":" + stub)
    subprocess.run([sys.executable, os.path.join(LLAMA_CPP, "gguf-py/gguf/scripts/gguf_new_metadata.py"), base, out,
                    "--chat-template", jinja, "--force"], check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return out


def serve(gguf, port):
    env = dict(os.environ, LD_LIBRARY_PATH=BIN)
    p = subprocess.Popen([os.path.join(BIN, "llama-server"), "-m", gguf, "--jinja", "--port", str(port), "-t", "1",
                          "-c", "4096", "--host", "127.0.0.1"], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return p
        except Exception:
            time.sleep(0.2)
    p.kill()
    raise RuntimeError("llama-server did not start on " + gguf)


def main():
    only = sys.argv[1:] or list(FAMILIES)
    work = tempfile.mkdtemp(prefix="chat_goldens_")
    out_path = "tests/data/chat_goldens.json"
    out = json.load(open(out_path)) if os.path.exists(out_path) else {"families": {}}
    for k, name in enumerate(only):
        fam = FAMILIES[name]
        template, jinja_file, vocab, markers = fam[:4]
        KWARGS.clear()
        KWARGS.update(fam[8])
        jinja = jinja_text(jinja_file)
        gguf = spm_gguf(work, jinja) if vocab == "llama2" else bpe_gguf(work, vocab, jinja)
        server = serve(gguf, PORT0 + k)
        try:
            port = PORT0 + k
            special = {}
            for m in markers + ["<think>", "</think>"]:
                ids = post(port, "/tokenize", {"content": m, "add_special": False, "parse_special": True})["tokens"]
                if len(ids) == 1 and post(port, "/tokenize", {"content": m, "add_special": False,
                                                             "parse_special": False})["tokens"] != ids:
                    special[m] = ids[0]
            bos = post(port, "/tokenize", {"content": "", "add_special": True})["tokens"]
            rng = random.Random(f"hearth chat goldens {name}")
            cases, seen = [], set()
            while len(cases) < CASES_PER_FAMILY:
                msgs = dialog(rng, fam)
                key = json.dumps(msgs)
                if key in seen:
                    continue
                seen.add(key)
                try:
                    text, ids = render(port, msgs)
                except urllib.error.HTTPError:
                    continue  # the Jinja refuses the dialog (raise_exception)
                case = {"dialog": msgs, "text": text, "ids": ids}
                if any(s in m["content"] for m in msgs for s in special):
                    case["ids_text_markers"] = text_marker_ids(port, msgs, special, bos)
                    assert case["ids_text_markers"] != ids
                else:  # the check of the method: without markers in the contents, llama-server's ids
                    assert text_marker_ids(port, msgs, special, bos) == ids, msgs
                cases.append(case)
            out["families"][name] = {"template": template, "jinja": jinja_file, "vocab": vocab, "special": special,
                                     "chat_template_kwargs": fam[8], "cases": cases}
            print(name, len(cases), "cases", file=sys.stderr)
        finally:
            server.terminate()
            server.wait()
    shutil.rmtree(work)
    # One case a line, so that a change shows as the cases it touches.
    with open(out_path, "w", encoding="utf-8") as f:
        f.write('{"families": {\n')
        for k, (name, fam) in enumerate(sorted(out["families"].items())):
            head = {key: v for key, v in fam.items() if key != "cases"}
            f.write(json.dumps(name) + ": " + json.dumps(head, ensure_ascii=False)[:-1] + ', "cases": [\n')
            f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in fam["cases"]))
            f.write("]}" + (",\n" if k + 1 < len(out["families"]) else "\n"))
        f.write("}}\n")


if __name__ == "__main__":
    main()
