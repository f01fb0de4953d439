#!/usr/bin/python3
"""Writes the fuzzers' dictionaries and generated seeds (docs/robustness.md, "Fuzzing").

    tools/make_fuzz_seeds.py            write tests/fuzz/dict/TARGET.dict, tests/fuzz/corpus/TARGET/gen-*
                                        and tests/fuzz/regressions/TARGET/gen-*
    tools/make_fuzz_seeds.py --check    also run each seed through its built fuzzer (build/fuzz/)
                                        with HEARTH_FUZZ_VERBOSE=1 and say which ones the parser refuses

Issue 20: the seeds were small valid files and the fuzzers never grew from them the inputs
that break hearth: JSON nested 200,000 deep, pre-tokenizer regexes built to backtrack or with
thousands of capture groups, added tokens whose bytes are not whole UTF-8 characters,
vocabularies with many added tokens. The seeds written here start the fuzzers next to those:
JSON nested at, just beyond and far beyond hearth's limit of 64 levels (base/limits.h) in
every place a reader copies or prints a value, tokenizer.json files with real and with
backtracking regexes, added tokens (control and user-defined, multi-byte, overlapping), and
GGUF and hearth models with a byte-level BPE vocabulary. The dictionaries give the mutator
the words those files are made of. Standard library only; the output is deterministic, so a
diff of the committed files shows what a change to this script did.

A seed that crashes the current code is still a seed (the fixes make it pass). Reproducers of
the crashes issue 20 names go to tests/fuzz/regressions/TARGET/gen-* (tools/fuzz.sh replays
them; the fuzzers' own finds sit beside them as found-*, which this script leaves alone).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
REGRESSIONS = os.path.join(ROOT, "tests", "fuzz", "regressions")
DICTS = os.path.join(ROOT, "tests", "fuzz", "dict")

# ---------------------------------------------------------------------------------------------
# What the files are made of

# tokenizer/bpe.cpp's regexes, as tokenizer.json files state them.
LLAMA3_REGEX = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
QWEN2_REGEX = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
               "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
# Other real pre-tokenizers' splits (DeepSeek-V3's digit and CJK splits, GPT-4o's cased words).
DEEPSEEK_DIGITS = "\\p{N}{1,3}"
DEEPSEEK_CJK = "[一-龥\u3040-ゟ゠-ヿ]+"
O200K_REGEX = ("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
               "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
               "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
# Regexes built to be costly: nested quantifiers that backtrack exponentially on a long run
# that ends without a match, the same through PCRE2's interpreter ((*NO_JIT): its own
# backtracking memory), verbs that try to raise the limits, and many capture groups (every
# backtracking frame of the interpreter holds all of them).
BACKTRACKING_REGEXES = [
    "(\\p{L}+)+\\d",
    "(?:\\s*)*[^\\s\\S]|\\s+",
    "(*NO_JIT)(\\p{L}|\\p{L}\\p{M}?)+!|\\p{L}+|\\s+",
    "(*NO_JIT)(*LIMIT_MATCH=2000000000)(*LIMIT_DEPTH=2000000000)(*LIMIT_HEAP=2000000000)(a|a?)+$|\\S+|\\s+",
    "(*NO_JIT)(*NO_START_OPT)(*NO_AUTO_POSSESS)(?:(\\w)|(\\W))*?\\z|.",
    "(?=(\\p{L}*)*\\p{N})|\\p{L}+|\\p{N}|\\s+",
]
BACKTRACKING_WORDS = "(*NO_JIT)(\\p{L}|\\p{L}\\p{M}?)+!|\\p{L}+|\\s+|."
MANY_GROUPS_REGEXES = [
    "()" * 63 + "(\\p{L}+)|\\s+|.",                     # 64 groups: hearth's limit
    "()" * 64 + "(\\p{L}+)|\\s+|.",                     # 65
    "(*NO_JIT)" + "()" * 2000 + "(?:a|b)*c|.",          # 2001 groups, 4.0 KB: the interpreter's frames are 32 KB each
]

CONTROL_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
                  "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>"]
USER_TOKENS = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
# Added tokens that share bytes with each other or with text: a prefix of another, one inside
# another, multi-byte ones, and ones spelled as the tokenizers spell spaces.
TRICKY_ADDED = ["<th", "<think>x", "think", "<|im", "中文", "文", "é", "e\u0301", "\u2581\u2581", "Ġ", "  ", "\n\n", "😀", "👍🏽"]

# Texts worth encoding (the fuzz targets also have their own list: tests/fuzz/fuzz_tokenizer.h).
TEXTS = [
    "Hello, world! It's 2024; we'll see.",
    "<|im_start|>user\nWhat is 12345 * 678?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
    "中文测试 日本語 한국어 😀👍🏽 e\u0301 A\u030astro\u0308m",
    "    \t\n\n\n  x  \r\n",
    "a" * 300,
    "<th<think><think>x think <|im",
]

# The keys hearth's readers look at, and the values they compare with.
HF_CONFIG_KEYS = ["architectures", "model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
                  "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings",
                  "rope_theta", "rms_norm_eps", "rope_scaling", "rope_parameters", "rope_type", "type", "factor",
                  "low_freq_factor", "high_freq_factor", "original_max_position_embeddings", "tie_word_embeddings",
                  "sliding_window", "use_sliding_window", "bos_token_id", "eos_token_id", "hidden_act",
                  "attention_bias", "mlp_bias", "torch_dtype", "weight_map"]
HF_CONFIG_VALUES = ["LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM", "Qwen2ForCausalLM", "llama", "mistral",
                    "qwen3", "llama3", "default", "linear", "dynamic", "yarn", "silu", "gelu", "bfloat16", "none"]
TOKENIZER_JSON_KEYS = ["version", "truncation", "padding", "added_tokens", "id", "content", "single_word", "lstrip",
                       "rstrip", "normalized", "special", "normalizer", "normalizers", "pre_tokenizer", "pretokenizers",
                       "pattern", "Regex", "String", "behavior", "invert", "add_prefix_space", "trim_offsets",
                       "use_regex", "post_processor", "processors", "single", "pair", "SpecialToken", "Sequence",
                       "type_id", "decoder", "model", "type", "dropout", "unk_token", "continuing_subword_prefix",
                       "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges", "vocab", "merges"]
TOKENIZER_JSON_VALUES = ["BPE", "WordPiece", "Unigram", "ByteLevel", "Split", "Isolated", "Removed", "MergedWithPrevious",
                         "Contiguous", "NFC", "NFD", "NFKC", "Sequence", "TemplateProcessing", "Metaspace", "Digits",
                         "\u0120", "\u010a", "\u0120 \u0120", "\u0120t", "\u0120the", "\u00e4\u00b8\u0143"]
TOKENIZER_CONFIG_KEYS = ["chat_template", "name", "template", "default", "tool_use", "bos_token", "eos_token", "pad_token",
                         "unk_token", "add_bos_token", "add_eos_token", "added_tokens_decoder", "content", "special",
                         "model_max_length", "tokenizer_class", "clean_up_tokenization_spaces", "enable_thinking"]
CHAT_MARKUP = ["{% for message in messages %}", "{{ bos_token }}", "{{ message['content'] }}", "{% endfor %}",
               "{% if add_generation_prompt %}", "[INST]", "[/INST]", "<<SYS>>", "<|user|>", "<|assistant|>", "<|end|>",
               "USER: ", "ASSISTANT:", "SYSTEM: ", "eos_token", "llama2", "zephyr", "chatml", "vicuna", "qwen3", "raw"]
SAFETENSORS_WORDS = ["dtype", "shape", "data_offsets", "__metadata__", "format", "pt", "F32", "F16", "BF16", "F64", "I8",
                     "U8", "I16", "I32", "I64", "BOOL", "F8_E4M3", "model.embed_tokens.weight", "lm_head.weight"]
GGUF_KEYS = ["general.architecture", "general.name", "general.alignment", "general.file_type",
             "general.quantization_version", "tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
             "tokenizer.ggml.merges", "tokenizer.ggml.pre", "tokenizer.ggml.scores", "tokenizer.ggml.bos_token_id",
             "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
             "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.remove_extra_whitespaces",
             "tokenizer.chat_template", "hearth.chat_template", "hearth.tokenizer.pre_split_regex",
             "hearth.tokenizer.normalizer", "hearth.tokenizer.ignore_merges", "hearth.tokenizer.sentencepiece_model"]
ARCH_KEYS = ["embedding_length", "feed_forward_length", "block_count", "attention.head_count", "attention.head_count_kv",
             "attention.key_length", "attention.value_length", "rope.dimension_count", "context_length", "vocab_size",
             "rope.freq_base", "attention.layer_norm_rms_epsilon", "attention.sliding_window", "rope.scaling.type",
             "rope.scaling.factor"]
GGUF_VALUES = ["llama", "qwen3", "gpt2", "none", "no_vocab", "llama-bpe", "llama3", "llama-v3", "qwen2", "gpt-2", "hearth",
               "nfc", "chatml", "token_embd.weight", "output.weight", "rope_freqs.weight", "blk.0.attn_q.weight",
               "output_norm.weight", "[PAD300]"]
PCRE2_SYNTAX = ["(*NO_JIT)", "(*LIMIT_MATCH=", "(*LIMIT_DEPTH=", "(*LIMIT_HEAP=", "4294967295)", "2000000000)", "(*UTF)", "(*UCP)",
                "(*NO_START_OPT)", "(*NO_AUTO_POSSESS)", "(*NO_DOTSTAR_ANCHOR)", "(*NOTEMPTY)", "(*CR)", "(*ANYCRLF)",
                "(*ACCEPT)", "(*FAIL)", "(*COMMIT)", "(*PRUNE)", "(*SKIP)", "(*THEN)", "(*MARK:a)",
                "\\p{L}", "\\p{N}", "\\p{M}", "\\p{Lu}", "\\p{Ll}", "\\P{L}", "\\p{Han}", "\\X", "\\R", "\\K", "\\C",
                "\\G", "\\z", "\\b", "\\d", "\\w", "\\s", "\\S", "\\r\\n", "(?:", "(?i:", "(?=", "(?!", "(?<=", "(?<!",
                "(?>", "(?|", "(?R)", "(?1)", "(?P<n>", "\\g{-1}", "\\1", ")+", ")*", ")?", "+?", "*+", "{1,3}",
                "{0,65535}", "{2,}", "[^\\r\\n\\p{L}\\p{N}]", "\\s+(?!\\S)", "\\s*[\\r\\n]+", "'s|'t|'re|'ve|'m|'ll|'d",
                "(a+)+$", "(\\p{L}+)+\\d", "()()()()()()()()", "((((((((", "))))))))", "[", "]", "|", ".*", ".+"]
UTF8_BYTES = ["é", "中", "😀", "\u200d", "\u0301", "\ufffd", "Ġ", "Ċ", "\u2581", "\ufeff"]
INVALID_BYTES = [b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe4\xb8",
                 b"\xf0\x9f\x98", b"\xe4", b"\xf0", b"\x98\x80", b"\xb8\xad", b"\x00"]


def utf8(s):
    return s.encode("utf-8") if isinstance(s, str) else s


# ---------------------------------------------------------------------------------------------
# Dictionaries (libFuzzer's -dict= format: one "quoted" entry per line, \\ \" \xNN escapes; an
# entry longer than 64 bytes is ignored by libFuzzer, so long regexes go in as fragments)

def dict_entry(b):
    b = utf8(b)
    out = ""
    for c in b:
        if c == 0x5c:
            out += "\\\\"
        elif c == 0x22:
            out += "\\\""
        elif 0x20 <= c < 0x7f:
            out += chr(c)
        else:
            out += "\\x%02X" % c
    return '"' + out + '"'


def json_string_body(s):
    """How s appears between the quotes of a JSON string."""
    return json.dumps(s, ensure_ascii=False)[1:-1]


def write_dict(target, groups):
    lines = ["# libFuzzer dictionary for fuzz_%s: written by tools/make_fuzz_seeds.py, do not edit." % target]
    seen = set()
    for title, entries in groups:
        lines.append("")
        lines.append("# " + title)
        for e in entries:
            e = utf8(e)
            if not e or len(e) > 64 or e in seen:
                continue
            seen.add(e)
            lines.append(dict_entry(e))
    os.makedirs(DICTS, exist_ok=True)
    with open(os.path.join(DICTS, target + ".dict"), "w") as f:
        f.write("\n".join(lines) + "\n")


JSON_STRUCTURE = ["[[[[[[[[[[[[[[[[", "[[[[[[[[", "]]]]]]]]", "]]]]]]]]]]]]]]]]", '{"a":{"a":{"a":{"a":', '{"a":', "}}}}}}}}",
                  '[{"a":[{"a":', "}]}]", "[", "]", "{", "}", '":', ",", '""', "null", "true", "false", "0", "-1", "1.5",
                  "1e400", "-0", "18446744073709551616", "4294967296", "2147483648", "65", "64", '"\\u0000"', '"\\ud800"',
                  '"\\ud83d\\ude00"', "\\u0301", "\\n", "\\\\"]


def json_keys(keys):
    return ['"%s"' % k for k in keys] + ['"%s":' % k for k in keys]


def json_values(values):
    return ['"%s"' % json_string_body(v) for v in values]


def added_token_words(json_form):
    words = CONTROL_TOKENS + USER_TOKENS + TRICKY_ADDED + ["<0x0A>", "<unk>", "[INST]", "<|reserved_special_token_0|>"]
    return [json_string_body(w) for w in words] if json_form else words


def write_dicts():
    regex_json = [json_string_body(r) for r in PCRE2_SYNTAX]
    text_bytes = UTF8_BYTES + INVALID_BYTES
    write_dict("hf_config", [("JSON structure: nesting", JSON_STRUCTURE),
                             ("config.json keys", json_keys(HF_CONFIG_KEYS)),
                             ("values", json_values(HF_CONFIG_VALUES))])
    write_dict("tokenizer_config", [("JSON structure: nesting", JSON_STRUCTURE),
                                    ("tokenizer_config.json keys", json_keys(TOKENIZER_CONFIG_KEYS)),
                                    ("chat templates", CHAT_MARKUP + CONTROL_TOKENS),
                                    ("multi-byte and invalid UTF-8", UTF8_BYTES + INVALID_BYTES)])
    write_dict("tokenizer_json", [("JSON structure: nesting", JSON_STRUCTURE),
                                  ("tokenizer.json keys", json_keys(TOKENIZER_JSON_KEYS)),
                                  ("tokenizer_config.json keys (after the first NUL)", json_keys(TOKENIZER_CONFIG_KEYS)),
                                  ("values", json_values(TOKENIZER_JSON_VALUES)),
                                  ("PCRE2 syntax, as it appears in a JSON string", regex_json),
                                  ("added and control tokens", added_token_words(True)),
                                  ("a whole added-token entry", ['{"id":300,"content":"<think>","special":false},',
                                                                 '{"id":301,"content":"<|im_end|>","special":true},',
                                                                 '{"type":"Split","pattern":{"Regex":"']),
                                  ("multi-byte UTF-8 and the NUL that starts the config and the texts",
                                   UTF8_BYTES + [b"\x00", b"\x00{}\x00", b'\x00{"add_bos_token":true}\x00'])])
    write_dict("safetensors", [("JSON structure: nesting", JSON_STRUCTURE),
                               ("safetensors header", ['"%s"' % w for w in SAFETENSORS_WORDS] +
                                ['"%s":' % w for w in SAFETENSORS_WORDS[:4]]),
                               ("header length prefixes", [struct.pack("<Q", n) for n in (2, 64, 0x10000, 100 << 20)])])
    gguf_types = [struct.pack("<I", t) for t in (4, 5, 6, 7, 8, 9, 10)]
    # A key as GGUF stores it: its u64 length, then its bytes.
    prefixed_keys = [struct.pack("<Q", len(k)) + k.encode() for k in GGUF_KEYS]
    model_groups = [("GGUF and hearth keys", GGUF_KEYS + ["llama." + k for k in ARCH_KEYS] + ["qwen3." + k for k in ARCH_KEYS]),
                    ("keys with their length prefix", prefixed_keys),
                    ("values", GGUF_VALUES),
                    ("value types and token types (u32/i32: 1 normal, 3 control, 4 user-defined, 5 unused)",
                     gguf_types + [struct.pack("<i", t) for t in (1, 3, 4, 5, 6, -1)]),
                    ("PCRE2 syntax", PCRE2_SYNTAX),
                    ("added and control tokens", added_token_words(False)),
                    ("byte-level spellings and merges", ["\u0120", "\u010a", "\u0120 t", "\u0120t he", "\u00e4\u00b8\u0143",
                                                         "i n", "e r"]),
                    ("multi-byte and invalid UTF-8", text_bytes)]
    write_dict("gguf", [("GGUF", [b"GGUF", struct.pack("<I", 3), struct.pack("<I", 2)])] + model_groups)
    write_dict("checkpoint", [("hearth", [b"HEARTHCK", struct.pack("<I", 2), struct.pack("<I", 1),
                                          struct.pack("<I", 64), struct.pack("<I", 256)])] + model_groups)
    write_dict("metadata", [("GGUF keys", GGUF_KEYS + ["llama." + k for k in ARCH_KEYS]),
                            ("keys with their length prefix", prefixed_keys),
                            ("value types", gguf_types + [struct.pack("<I", t) for t in (0, 1, 2, 3, 11, 12)]),
                            ("values", GGUF_VALUES + text_bytes)])
    write_dict("bpe_vocab", [("record kinds (fuzz_bpe_vocab.cpp): a NUL, then the kind",
                              [b"\x00A", b"\x00C", b"\x00W", b"\x00N", b"\x00M", b"\x00R", b"\x00r0", b"\x00r1", b"\x00r2",
                               b"\x00F0", b"\x00F101", b"\x00F201", b"\x00F301", b"\x00T"]),
                             ("added tokens as records", [b"\x00A" + utf8(w) for w in USER_TOKENS + TRICKY_ADDED] +
                              [b"\x00C" + utf8(w) for w in CONTROL_TOKENS] +
                              [b"\x00A" + b for b in INVALID_BYTES if b != b"\x00"]),
                             ("added and control tokens", added_token_words(False)),
                             ("PCRE2 syntax", PCRE2_SYNTAX),
                             ("regex records", [b"\x00R" + utf8(r) for r in PCRE2_SYNTAX[:20]]),
                             ("byte-level spellings and merges", ["\u0120", "\u010a", "\u0120 t", "\u0120t he", "i n"]),
                             ("multi-byte and invalid UTF-8", text_bytes)])
    write_dict("sentencepiece", [("pieces", ["\u2581", "\u2581\u2581", "<0x0A>", "<0x00>", "<0xFF>", "<unk>", "<s>", "</s>",
                                             "<pad>", "[INST]", "<|im_end|>", "<think>"]),
                                 # ModelProto: pieces (field 1), each piece (1), score (2, float), type (3):
                                 # 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
                                 ("protobuf tags", [b"\x0a", b"\x12", b"\x1a", b"\x15", b"\x18\x01", b"\x18\x02", b"\x18\x03",
                                                    b"\x18\x04", b"\x18\x05", b"\x18\x06", b"\x18\x07",
                                                    b"\x98\x02\x01",  # trainer_spec.byte_fallback (35) = true
                                                    b"\x0a\x03nfc", b"\x0a\x04nfkc", b"\x0a\x08identity"]),
                                 ("multi-byte and invalid UTF-8", text_bytes)])
    write_dict("llama2c", [("ak42", [b"ak42", struct.pack("<I", 0x616b3432), struct.pack("<i", 1), struct.pack("<i", 2),
                                     struct.pack("<i", -32000), struct.pack("<i", 32000), struct.pack("<i", 0x7fffffff),
                                     struct.pack("<i", 64)])])


# ---------------------------------------------------------------------------------------------
# JSON nested deep

def nested_array(depth, inner='"x"'):
    """depth arrays, one inside the other, around inner (depth 1: ["x"])."""
    return "[" * depth + inner + "]" * depth


def nested_object(depth, inner='"x"', key="a"):
    return ('{"%s":' % key) * depth + inner + "}" * depth


def nested_mixed(depth, inner="1"):
    s = inner
    for i in range(depth):
        s = ("[%s]" if i % 2 else '{"a":%s}') % s
    return s


# Depths relative to the document: a value at depth d inside the root object nests d + 1 deep.
# hearth's limit is 64 (base/limits.h kJsonDepth): 63 and 64 must parse, 65 and 66 must not;
# 1000 and 4000 levels are far beyond it (a few KB); the fuzzer grows them further. On the
# code of issue 20 copying a value ~10,000 arrays deep overflows the stack of the ASan build
# (8 MB): the 8000-deep seeds (16 KB) are one mutation from that.
DEPTHS = [62, 63, 64, 65]
DEEP = [1000, 4000]
DEEPEST = 8000


def write(target, name, data, where=CORPUS, limit=50 * 1024):
    d = os.path.join(where, target)
    os.makedirs(d, exist_ok=True)
    data = utf8(data)
    assert len(data) < limit, (target, name, len(data))
    with open(os.path.join(d, "gen-" + name), "wb") as f:
        f.write(data)


HF_BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512,
           "max_position_embeddings": 256, "rope_theta": 500000.0, "rms_norm_eps": 1e-05, "tie_word_embeddings": False,
           "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu"}


def json_with(base, key, raw_value):
    """base as JSON with key's value replaced by raw_value (JSON text)."""
    doc = dict(base)
    doc[key] = "@@@"
    return json.dumps(doc, ensure_ascii=False).replace('"@@@"', raw_value)


def write_hf_config():
    for d in DEPTHS:
        write("hf_config", "rope_scaling-depth%d.json" % (d + 1), json_with(HF_BASE, "rope_scaling", nested_object(d)))
        write("hf_config", "architectures-depth%d.json" % (d + 1), json_with(HF_BASE, "architectures", nested_array(d, '"LlamaForCausalLM"')))
        write("hf_config", "top-array-depth%d.json" % (d + 1), nested_array(d, json.dumps(HF_BASE)))
    for d in DEEP:
        write("hf_config", "rope_scaling-deep%d.json" % d, json_with(HF_BASE, "rope_scaling", nested_mixed(d)))
        write("hf_config", "unknown-key-deep%d.json" % d, json_with(HF_BASE, "quantization_config", nested_array(d)))
        write("hf_config", "eos_token_id-deep%d.json" % d, json_with(HF_BASE, "eos_token_id", nested_array(d, "2")))
    # llama3 rope scaling with a value nested where a number belongs
    llama3 = dict(HF_BASE, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    scaling = json.dumps(llama3["rope_scaling"]).replace("8.0", nested_array(64, "8.0"), 1)
    write("hf_config", "rope_scaling-llama3-factor-depth66.json", json_with(HF_BASE, "rope_scaling", scaling))
    write("hf_config", "rope_scaling-deep%d.json" % DEEPEST, json_with(HF_BASE, "rope_scaling", nested_array(DEEPEST)))


def write_tokenizer_config():
    template = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    base = {"add_bos_token": False, "bos_token": None, "eos_token": "<|im_end|>", "chat_template": template}
    for d in DEPTHS:
        write("tokenizer_config", "chat_template-depth%d.json" % (d + 1),
              json_with(base, "chat_template", nested_array(d - 1, json.dumps({"name": "default", "template": template}))))
        write("tokenizer_config", "bos_token-depth%d.json" % (d + 1), json_with(base, "bos_token", nested_object(d, '"<s>"', "content")))
    for d in DEEP:
        write("tokenizer_config", "added_tokens_decoder-deep%d.json" % d, json_with(base, "added_tokens_decoder", nested_mixed(d)))
        write("tokenizer_config", "chat_template-deep%d.json" % d, json_with(base, "chat_template", nested_array(d, json.dumps(template))))
    write("tokenizer_config", "top-array-deep4000.json", nested_array(4000, json.dumps(base)))
    write("tokenizer_config", "chat_template-deep%d.json" % DEEPEST, json_with(base, "chat_template", nested_array(DEEPEST, '"x"')))


# ---------------------------------------------------------------------------------------------
# Byte-level BPE vocabularies

def byte_level_map():
    printable = [b for b in range(256) if 0x21 <= b <= 0x7e or 0xa1 <= b <= 0xac or 0xae <= b <= 0xff]
    out, n = {}, 256
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(n)
            n += 1
    return out


BYTE_LEVEL = byte_level_map()


def spell(raw):
    return "".join(BYTE_LEVEL[b] for b in utf8(raw))


WORDS = [" the", "in", "er", " a", "ing", " th", "he", "re", "中文", "é", " 😀", "12", "123", "  ", "\n\n", "ab" * 8]


class Vocab:
    """256 byte tokens, the tokens and merges that build each word left to right, then added tokens."""

    def __init__(self, words=WORDS):
        self.tokens = [spell(bytes([b])) for b in range(256)]
        self.types = [1] * 256
        self.merges = []
        for w in words:
            w = utf8(w)
            for k in range(1, len(w)):
                left, right = spell(w[:k]), spell(w[k:k + 1])
                if left + right not in self.tokens:
                    self.tokens.append(left + right)
                    self.types.append(1)
                if left + " " + right not in self.merges:
                    self.merges.append(left + " " + right)

    def add(self, text, type_):
        self.tokens.append(text)
        self.types.append(type_)
        return len(self.tokens) - 1


def tokenizer_json(vocab, pre_tokenizer, normalizer=None, post_processor=None, ignore_merges=False, pair_merges=False):
    normal = {t: i for i, (t, ty) in enumerate(zip(vocab.tokens, vocab.types)) if ty == 1}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": ty == 3} for i, (t, ty) in enumerate(zip(vocab.tokens, vocab.types)) if ty in (3, 4)]
    merges = [m.split(" ") for m in vocab.merges] if pair_merges else vocab.merges
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": normalizer,
            "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": ignore_merges, "vocab": normal, "merges": merges}}


def split(regex):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


def byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def pre_splits(*regexes, use_regex=False):
    return {"type": "Sequence", "pretokenizers": [split(r) for r in regexes] + [byte_level(use_regex)]}


def with_texts(doc, config, texts=TEXTS):
    """tokenizer.json, NUL, tokenizer_config.json, NUL, the texts NUL-separated (fuzz_tokenizer_json.cpp)."""
    body = doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False)
    return body + "\0" + json.dumps(config, ensure_ascii=False) + "\0" + "\0".join(texts)


LLAMA3_CONFIG = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "add_bos_token": True}
QWEN3_CONFIG = {"bos_token": None, "eos_token": {"content": "<|im_end|>", "special": True}, "add_bos_token": False}


def added_vocab(words=WORDS, control=CONTROL_TOKENS, user=USER_TOKENS + TRICKY_ADDED):
    v = Vocab(words)
    for t in control:
        v.add(t, 3)
    for t in user:
        v.add(t, 4)
    return v


def write_tokenizer_json():
    v = added_vocab()
    llama3 = tokenizer_json(v, pre_splits(LLAMA3_REGEX), ignore_merges=True,
                            post_processor={"type": "TemplateProcessing",
                                            "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                                                       {"Sequence": {"id": "A", "type_id": 0}}]})
    write("tokenizer_json", "llama3-regex.json", with_texts(llama3, LLAMA3_CONFIG))
    qwen = tokenizer_json(v, pre_splits(QWEN2_REGEX), normalizer={"type": "NFC"}, pair_merges=True)
    write("tokenizer_json", "qwen2-nfc-pairs.json", with_texts(qwen, QWEN3_CONFIG))
    write("tokenizer_json", "gpt2-bytelevel.json", with_texts(tokenizer_json(v, byte_level(True)), {}))
    write("tokenizer_json", "deepseek-3-splits.json",
          with_texts(tokenizer_json(v, pre_splits(DEEPSEEK_DIGITS, DEEPSEEK_CJK, LLAMA3_REGEX)), LLAMA3_CONFIG))
    write("tokenizer_json", "o200k-and-gpt2.json", with_texts(tokenizer_json(v, pre_splits(O200K_REGEX, use_regex=True)), {}))
    for i, r in enumerate(BACKTRACKING_REGEXES):
        write("tokenizer_json", "backtracking-%d.json" % i,
              with_texts(tokenizer_json(Vocab(), pre_splits(r)), {}, ["a" * 40 + "!", " " * 40 + "x", "é" * 20]))
    for i, r in enumerate(MANY_GROUPS_REGEXES):
        write("tokenizer_json", "capture-groups-%d.json" % i, with_texts(tokenizer_json(Vocab(), pre_splits(r)), {}, ["ab" * 20 + "c"]))
    # Added tokens only: many, overlapping, multi-byte; an added token equal to a normal one.
    many = Vocab()
    for i in range(250):
        many.add("<|reserved_special_token_%d|>" % i, 3 if i % 2 else 4)
    many.add(spell(" the"), 4)
    write("tokenizer_json", "many-added.json", with_texts(tokenizer_json(many, pre_splits(LLAMA3_REGEX)), LLAMA3_CONFIG,
                                                           ["<|reserved_special_token_1|><|reserved_special_token_2|>",
                                                            "<|reserved_special_token_" * 20]))
    # Normal tokens spelled outside the byte-level alphabet (decoded as their own text).
    odd = Vocab()
    for t in ["中", "a中", "\u2581the", "<0x0A>"]:
        odd.tokens.append(t)
        odd.types.append(1)
    write("tokenizer_json", "non-byte-level-tokens.json", with_texts(tokenizer_json(odd, byte_level(True), ignore_merges=True), {},
                                                                      ["中 a中 \u2581the <0x0A>"]))
    # Nested at and beyond the limit wherever the reader copies a value (j.value(...)).
    small = tokenizer_json(Vocab(), pre_splits(LLAMA3_REGEX))
    for d in DEPTHS[1:3]:
        for key in ("normalizer", "post_processor", "decoder"):
            write("tokenizer_json", "%s-depth%d.json" % (key, d + 1), json_with(small, key, nested_object(d, "null", "type")))
        write("tokenizer_json", "added_tokens-depth%d.json" % (d + 1), json_with(small, "added_tokens", nested_array(d, "")))
        write("tokenizer_json", "config-bos-depth%d.json" % (d + 1),
              json.dumps(small) + "\0" + json_with(LLAMA3_CONFIG, "bos_token", nested_object(d, '"<s>"', "content")))
    for d in DEEP:
        write("tokenizer_json", "pre_tokenizer-deep%d.json" % d, json_with(small, "pre_tokenizer", nested_mixed(d)))
        write("tokenizer_json", "post_processor-deep%d.json" % d, json_with(small, "post_processor", nested_array(d, "null")))
        write("tokenizer_json", "config-deep%d.json" % d, json.dumps(small) + "\0" + nested_array(d, "{}"))
    write("tokenizer_json", "normalizer-deep%d.json" % DEEPEST, json_with(small, "normalizer", nested_array(DEEPEST, "null")))
    write("tokenizer_json", "config-bos-deep%d.json" % DEEPEST,
          json.dumps(small) + "\0" + json_with(LLAMA3_CONFIG, "bos_token", nested_array(DEEPEST, '"<s>"')))


def write_safetensors():
    def st(header, data=b"\0" * 16):
        h = json.dumps(header).encode() if isinstance(header, dict) else header.encode()
        h += b" " * (-len(h) % 8)  # the data stays aligned
        return struct.pack("<Q", len(h)) + h + data

    tensor = {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}
    base = {"__metadata__": {"format": "pt"}, "w": tensor}
    for d in DEPTHS:
        write("safetensors", "metadata-depth%d.safetensors" % (d + 1), st(json_with(base, "__metadata__", nested_object(d, "{}"))))
        write("safetensors", "shape-depth%d.safetensors" % (d + 2),
              st(json_with(base, "w", json.dumps(tensor).replace("[2, 2]", nested_array(d, "2")))))
    for d in DEEP:
        write("safetensors", "metadata-deep%d.safetensors" % d, st(json_with(base, "__metadata__", nested_mixed(d))))
        write("safetensors", "dtype-deep%d.safetensors" % d,
              st(json_with(base, "w", json.dumps(tensor).replace('"F32"', nested_array(d, '"F32"')))))
        write("safetensors", "offsets-deep%d.safetensors" % d,
              st(json_with(base, "w", json.dumps(tensor).replace("[0, 16]", "[0, %s]" % nested_array(d, "16")))))
    write("safetensors", "offsets-deep%d.safetensors" % DEEPEST,
          st(json_with(base, "w", json.dumps(tensor).replace("[0, 16]", "[0, %s]" % nested_array(DEEPEST, "16")))))


# ---------------------------------------------------------------------------------------------
# GGUF and hearth v2 models with a byte-level BPE vocabulary

def gguf_string(s):
    b = utf8(s)
    return struct.pack("<Q", len(b)) + b


class Meta:
    """Typed key/values in GGUF's encoding (formats/metadata.h)."""

    def __init__(self):
        self.entries = []

    def put(self, key, type_, value):
        self.entries.append(gguf_string(key) + struct.pack("<I", type_) + value)

    def u32(self, k, v): self.put(k, 4, struct.pack("<I", v))
    def f32(self, k, v): self.put(k, 6, struct.pack("<f", v))
    def bool(self, k, v): self.put(k, 7, struct.pack("<B", int(v)))
    def string(self, k, v): self.put(k, 8, gguf_string(v))
    def strings(self, k, vs): self.put(k, 9, struct.pack("<IQ", 8, len(vs)) + b"".join(gguf_string(v) for v in vs))
    def i32s(self, k, vs): self.put(k, 9, struct.pack("<IQ", 5, len(vs)) + b"".join(struct.pack("<i", v) for v in vs))

    def encode(self):
        return b"".join(self.entries)


DIM, HIDDEN = 2, 4  # one head of 2: the smallest model hearth accepts, so the seeds stay small


def model_tensors(n_vocab):
    """hearth's tensor names and shapes (outermost first) for a 1-layer llama of dim 2, all f32,
    tied embeddings; token_embd last, so that the file ends with its data."""
    t = [("blk.0.attn_norm.weight", [DIM]), ("blk.0.attn_q.weight", [DIM, DIM]), ("blk.0.attn_k.weight", [DIM, DIM]),
         ("blk.0.attn_v.weight", [DIM, DIM]), ("blk.0.attn_output.weight", [DIM, DIM]), ("blk.0.ffn_norm.weight", [DIM]),
         ("blk.0.ffn_gate.weight", [HIDDEN, DIM]), ("blk.0.ffn_down.weight", [DIM, HIDDEN]),
         ("blk.0.ffn_up.weight", [HIDDEN, DIM]), ("output_norm.weight", [DIM]), ("token_embd.weight", [n_vocab, DIM])]
    return t


def tensor_data(tensors, texts):
    """Each tensor's bytes: ones (norms) and small values, with the texts (NUL-separated) at the end
    of the last tensor: the fuzz targets encode the file's last bytes (fuzz_model.h)."""
    out = []
    for name, shape in tensors:
        n = 1
        for s in shape:
            n *= s
        out.append(bytearray(struct.pack("<f", 1.0 if len(shape) == 1 else 0.01) * n))
    tail = b"\0" + b"\0".join(utf8(t) for t in texts)
    tail = tail[:min(len(out[-1]), 1024)]
    out[-1][len(out[-1]) - len(tail):] = tail
    return [bytes(b) for b in out]


def model_metadata(vocab, tokenizer_keys, arch="llama", name="fuzz-seed", dim=DIM, hidden=HIDDEN, layers=1, heads=1,
                   kv_heads=1, n_ctx=64, head_dim=None):
    m = Meta()
    m.string("general.architecture", arch)
    m.string("general.name", name)
    for k, v in (("embedding_length", dim), ("feed_forward_length", hidden), ("block_count", layers),
                 ("attention.head_count", heads), ("attention.head_count_kv", kv_heads), ("context_length", n_ctx),
                 ("vocab_size", len(vocab.tokens))):
        m.u32(arch + "." + k, v)
    if head_dim:
        m.u32(arch + ".attention.key_length", head_dim)
        m.u32(arch + ".attention.value_length", head_dim)
    m.f32(arch + ".rope.freq_base", 10000.0)
    m.f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5)
    m.string("tokenizer.ggml.model", "gpt2")
    m.strings("tokenizer.ggml.tokens", vocab.tokens)
    m.i32s("tokenizer.ggml.token_type", vocab.types)
    m.strings("tokenizer.ggml.merges", vocab.merges)
    tokenizer_keys(m)
    return m


def gguf_file(meta, tensors, data, types=None):
    """types: each tensor's GGUF type (default: all f32)."""
    align = 32
    infos = b""
    offset = 0
    offsets = []
    for i, ((name, shape), d) in enumerate(zip(tensors, data)):
        offset += -offset % align
        offsets.append(offset)
        infos += gguf_string(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", s) for s in reversed(shape))
        infos += struct.pack("<IQ", types[i] if types else 0, offset)
        offset += len(d)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta.entries)) + meta.encode() + infos
    head += b"\0" * (-len(head) % align)
    body = bytearray()
    for o, d in zip(offsets, data):
        body += b"\0" * (o - len(body))
        body += d
    return head + bytes(body)


def hearth_file(meta, tensors, data):
    m = meta.encode()
    table_offset = 64 + len(m)
    data_offset = table_offset + 128 * len(tensors)
    data_offset += -data_offset % 64
    table = b""
    body = bytearray()
    at = data_offset
    for (name, shape), d in zip(tensors, data):
        at += -at % 64
        entry = name.encode().ljust(64, b"\0") + struct.pack("<II", 0, len(shape))
        entry += b"".join(struct.pack("<Q", s) for s in (shape + [1] * 4)[:4]) + struct.pack("<QQQ", at, len(d), 0)
        table += entry
        body += b"\0" * (at - data_offset - len(body))
        body += d
        at += len(d)
    header = b"HEARTHCK" + struct.pack("<IIQQQQQQ", 2, 64, len(meta.entries), 64, len(tensors), table_offset, data_offset,
                                       data_offset + len(body))
    out = header + m + table
    return out + b"\0" * (data_offset - len(out)) + bytes(body)


def model_seeds():
    """(name, vocabulary, tokenizer keys, texts): each becomes a GGUF and a hearth file."""
    def keys(pre=None, regexes=None, normalizer=None, ignore_merges=None, bos=None, eos=None, add_bos=None):
        def f(m):
            if pre is not None:
                m.string("tokenizer.ggml.pre", pre)
            if regexes is not None:
                m.strings("hearth.tokenizer.pre_split_regex", regexes)
            if normalizer is not None:
                m.string("hearth.tokenizer.normalizer", normalizer)
            if ignore_merges is not None:
                m.bool("hearth.tokenizer.ignore_merges", ignore_merges)
            if bos is not None:
                m.u32("tokenizer.ggml.bos_token_id", bos)
            if eos is not None:
                m.u32("tokenizer.ggml.eos_token_id", eos)
            if add_bos is not None:
                m.bool("tokenizer.ggml.add_bos_token", add_bos)
        return f

    v = added_vocab()
    bos, eos = v.tokens.index("<|begin_of_text|>"), v.tokens.index("<|im_end|>")
    seeds = [
        ("bpe-llama3-regex", v, keys("llama-bpe", [LLAMA3_REGEX], None, True, bos, eos, True), TEXTS),
        ("bpe-qwen2-nfc", v, keys("qwen2", [QWEN2_REGEX], "nfc", False, None, eos, False), TEXTS),
        # llama.cpp's files: no regex key, the pre-tokenizer by name.
        ("bpe-llamacpp-llama-bpe", v, keys("llama-bpe", bos=bos, eos=eos), TEXTS),
        ("bpe-llamacpp-qwen2", v, keys("qwen2", eos=eos), TEXTS),
        ("bpe-llamacpp-gpt-2", v, keys("gpt-2"), TEXTS),
        ("bpe-three-regexes", v, keys("hearth", [DEEPSEEK_DIGITS, DEEPSEEK_CJK, O200K_REGEX], None, False), TEXTS),
        ("bpe-backtracking", Vocab(), keys("hearth", [BACKTRACKING_REGEXES[0], BACKTRACKING_REGEXES[2]]),
         ["a" * 40 + "!", "é" * 20 + "1"]),
        ("bpe-capture-groups", Vocab(), keys("hearth", [MANY_GROUPS_REGEXES[1]]), ["ab" * 20 + "c"]),
    ]
    # User-defined added tokens that are not whole UTF-8 characters (GGUF strings are bytes):
    # the tail of 😀, the head of 中, a lone continuation byte. On the code of issue 20 these
    # overflow the encoder's buffer (a copy is in tests/fuzz/regressions/).
    partial = Vocab()
    for t in (b"\x9f\x98\x80", b"\xe4\xb8", b"\xad", b"<\xe4"):
        partial.add(t, 4)
    partial.add("<|im_end|>", 3)
    seeds.append(("bpe-partial-utf8-added", partial, keys("llama-bpe", [LLAMA3_REGEX]),
                  ["x" * 20 + "😀 中文 " + "y" * 20 + "中", "<中 <\xe4"]))
    # Many added tokens (every one is looked for at every byte of a text).
    many = Vocab()
    for i in range(1000):
        many.add("<t%d>" % i, 3 if i % 3 == 0 else 4)
    seeds.append(("bpe-1000-added", many, keys("llama-bpe", [LLAMA3_REGEX]),
                  ["".join("<t%d>" % i for i in range(0, 1000, 7)), "<t1<t12<t123<t999><t1000>"]))
    return seeds


def write_models():
    for name, vocab, tokenizer_keys, texts in model_seeds():
        tensors = model_tensors(len(vocab.tokens))
        data = tensor_data(tensors, texts)
        meta = model_metadata(vocab, tokenizer_keys)
        write("gguf", name + ".gguf", gguf_file(meta, tensors, data))
        write("checkpoint", name + ".hearth", hearth_file(meta, tensors, data))


# ---------------------------------------------------------------------------------------------
# fuzz_forward's models: every weight type hearth reads, in shapes that are no multiple of the
# kernels' interleaving or vector width, so that the fuzzer starts inside every kernel.

# GGUF type: (name, elements per block, bytes per block, offsets of the block's f16 scales).
GGUF_TYPES = {
    0: ("f32", 1, 4, []), 1: ("f16", 1, 2, []), 30: ("bf16", 1, 2, []),
    2: ("q4_0", 32, 18, [0]), 3: ("q4_1", 32, 20, [0, 2]), 6: ("q5_0", 32, 22, [0]), 7: ("q5_1", 32, 24, [0, 2]),
    8: ("q8_0", 32, 34, [0]), 20: ("iq4_nl", 32, 18, [0]),
    10: ("q2_k", 256, 84, [80, 82]), 11: ("q3_k", 256, 110, [108]), 12: ("q4_k", 256, 144, [0, 2]),
    13: ("q5_k", 256, 176, [0, 2]), 14: ("q6_k", 256, 210, [208]), 23: ("iq4_xs", 256, 136, [0]),
}
F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS = (
    0, 1, 30, 2, 3, 6, 7, 8, 20, 10, 11, 12, 13, 14, 23)


class Lcg:
    """A small deterministic generator (the seeds must not change from run to run)."""

    def __init__(self, seed):
        self.x = seed

    def byte(self):
        self.x = (self.x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return self.x >> 56


def weights(type_, shape, rng, norm=False):
    """A tensor's bytes in type_: norms ones, else small values (quants: random bits, scales 1/64)."""
    n = 1
    for s in shape:
        n *= s
    name, per_block, block_bytes, scales = GGUF_TYPES[type_]
    if norm:
        return struct.pack("<f", 1.0) * n
    if per_block == 1:
        vals = [((rng.byte() - 128) / 128.0) * 0.05 for _ in range(n)]
        if type_ == F32:
            return b"".join(struct.pack("<f", v) for v in vals)
        if type_ == F16:
            return b"".join(struct.pack("<e", v) for v in vals)
        return b"".join(struct.pack("<f", v)[2:] for v in vals)  # bf16: the f32's upper half
    assert n % per_block == 0, (name, shape)
    out = bytearray(rng.byte() for _ in range(n // per_block * block_bytes))
    for b in range(0, len(out), block_bytes):
        for o in scales:
            out[b + o:b + o + 2] = struct.pack("<e", 1.0 / 64)
    return bytes(out)


def forward_model(arch, dim, hidden, layers, heads, kv_heads, layer_types, embd_type, output_type=None, head_dim=None,
                  n_ctx=16):
    """A GGUF model on a 256-byte vocabulary; layer_types[i] gives layer i's (q, k, v, o, gate, down, up) types
    (cycled); output_type None ties the output to the embedding."""
    vocab = Vocab(words=[])
    hd = head_dim or dim // heads
    rng = Lcg(dim * 1000003 + hidden * 101 + layers)
    tensors, types, data = [], [], []

    def add(name, shape, type_, norm=False):
        tensors.append((name, shape))
        types.append(F32 if norm else type_)
        data.append(weights(F32 if norm else type_, shape, rng, norm))

    add("token_embd.weight", [len(vocab.tokens), dim], embd_type)
    for i in range(layers):
        q, k, v, o, gate, down, up = layer_types[i % len(layer_types)]
        p = "blk.%d." % i
        add(p + "attn_norm.weight", [dim], F32, norm=True)
        add(p + "attn_q.weight", [heads * hd, dim], q)
        add(p + "attn_k.weight", [kv_heads * hd, dim], k)
        add(p + "attn_v.weight", [kv_heads * hd, dim], v)
        add(p + "attn_output.weight", [dim, heads * hd], o)
        if arch == "qwen3":
            add(p + "attn_q_norm.weight", [hd], F32, norm=True)
            add(p + "attn_k_norm.weight", [hd], F32, norm=True)
        add(p + "ffn_norm.weight", [dim], F32, norm=True)
        add(p + "ffn_gate.weight", [hidden, dim], gate)
        add(p + "ffn_down.weight", [dim, hidden], down)
        add(p + "ffn_up.weight", [hidden, dim], up)
    add("output_norm.weight", [dim], F32, norm=True)
    if output_type is not None:
        add("output.weight", [len(vocab.tokens), dim], output_type)
    m = model_metadata(vocab, lambda m: m.string("tokenizer.ggml.pre", "gpt-2"), arch, "fuzz-forward-seed", dim, hidden,
                       layers, heads, kv_heads, n_ctx, head_dim)
    return gguf_file(m, tensors, data, types)


def write_forward_models():
    seeds = [
        # The K-quants and IQ4_XS in rows of 256: heads of 64, a KV head of 64 (8 rows of K and V
        # short of the interleaving's 8 x 8), the embedding (tied) in Q2_K.
        ("kquants-tied", forward_model("llama", 256, 256, 1, 4, 1, [(Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, Q4_K)], Q2_K)),
        ("kquants-output", forward_model("llama", 256, 256, 1, 4, 1, [(Q4_K, Q5_K, Q6_K, Q2_K, IQ4_XS, Q3_K, Q5_K)],
                                         Q2_K, output_type=Q3_K)),
        # Blocks of 32 and the float types: dim 96 (3 heads of 32), FFN 160, two layers; no count a
        # multiple of 64.
        ("blocks32", forward_model("llama", 96, 160, 2, 3, 1, [(Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, F16),
                                                               (BF16, F32, Q8_0, Q4_0, Q4_1, Q5_0, IQ4_NL)], F16, Q8_0)),
        # Qwen3: a head of 48 (key_length) that is not dim / heads, with its q and k norms.
        ("qwen3-head48", forward_model("qwen3", 64, 96, 1, 2, 1, [(Q8_0, Q8_0, Q4_0, Q8_0, Q4_0, Q8_0, Q4_0)], F32,
                                       head_dim=48)),
        # Odd float shapes: dim 40 in 4 heads of 10, 2 KV heads, FFN 24, a context of 4.
        ("odd-floats", forward_model("llama", 40, 24, 2, 4, 2, [(F32, F16, BF16, F16, F32, BF16, F16)], F32, BF16,
                                     n_ctx=4)),
    ]
    for name, data in seeds:
        write("forward", name + ".gguf", data, limit=256 * 1024)


# ---------------------------------------------------------------------------------------------
# fuzz_bpe_vocab's records (tests/fuzz/fuzz_bpe_vocab.cpp)

def records(*recs):
    return b"\0".join(utf8(r[0]) + utf8(r[1]) for r in recs)


def write_bpe_vocab():
    words = [("W", w) for w in WORDS]
    control = [("C", t) for t in CONTROL_TOKENS]
    user = [("A", t) for t in USER_TOKENS]
    texts = [("T", t) for t in TEXTS]
    write("bpe_vocab", "llama3.bin", records(("r", "0"), ("F", "106"), *words, *control, *user, *texts))
    write("bpe_vocab", "qwen2-nfc.bin", records(("r", "1"), ("F", "2-6"), *words, *control, *user, *texts))
    write("bpe_vocab", "gpt2.bin", records(("r", "2"), *words, *texts))
    write("bpe_vocab", "three-regexes.bin", records(("R", DEEPSEEK_DIGITS), ("R", DEEPSEEK_CJK), ("r", "0"), *words, *texts))
    write("bpe_vocab", "tricky-added.bin", records(("r", "0"), *words, *control, *[("A", t) for t in TRICKY_ADDED], *texts))
    write("bpe_vocab", "merges-as-given.bin", records(("r", "2"), ("N", spell(" t")), ("N", spell(" th")), ("M", spell(" ") + " t"),
                                                      ("M", spell(" t") + " h"), ("N", "中"), ("N", "a中"), ("T", " th the 中 a中")))
    for i, r in enumerate(BACKTRACKING_REGEXES):
        write("bpe_vocab", "backtracking-%d.bin" % i, records(("R", r), ("T", "a" * 40 + "!"), ("T", " " * 40 + "x")))
    for i, r in enumerate(MANY_GROUPS_REGEXES):
        write("bpe_vocab", "capture-groups-%d.bin" % i, records(("R", r), ("T", "ab" * 20 + "c")))
    write("bpe_vocab", "partial-utf8-added.bin",
          records(("r", "0"), ("A", b"\x9f\x98\x80"), ("A", b"\xe4\xb8"), ("A", b"\xad"), ("T", "x" * 20 + "😀 中文")))


# ---------------------------------------------------------------------------------------------
# Reproducers of the crashes issue 20 names, made rather than found (tests/fuzz/regressions/;
# the fuzzers' own finds sit beside them, minimized). Each fails on the code of issue 20 and
# must pass once it is fixed.

def write_regressions():
    def reg(target, name, data):
        write(target, name, data, REGRESSIONS)

    # Copying a value nested 16,000 deep overflows the stack (the ASan build's 8 MB run out near
    # 10,000; 16,000 leaves a margin). One reproducer for each place a reader copies a value of
    # the file. (Printing one, config.json's architectures[0], takes 28,000 levels: the fuzzer's
    # find, found-stack-overflow-architectures-dump-*, is the reproducer.)
    deep = 16000
    reg("hf_config", "stack-overflow-rope_scaling-deep%d.json" % deep, json_with(HF_BASE, "rope_scaling", nested_array(deep)))
    reg("hf_config", "stack-overflow-eos_token_id-deep%d.json" % deep, json_with(HF_BASE, "eos_token_id", nested_array(deep, "2")))
    small = tokenizer_json(Vocab(), pre_splits(LLAMA3_REGEX))
    reg("tokenizer_json", "stack-overflow-normalizer-deep%d.json" % deep, json_with(small, "normalizer", nested_array(deep, "null")))
    reg("tokenizer_json", "stack-overflow-pre_tokenizer-deep%d.json" % deep, json_with(small, "pre_tokenizer", nested_array(deep, "null")))
    reg("tokenizer_json", "stack-overflow-config-bos_token-deep%d.json" % deep,
        json.dumps(small) + "\0" + json_with(LLAMA3_CONFIG, "bos_token", nested_array(deep, '"<s>"')))
    tensor = '{"dtype": "F32", "shape": [2, 2], "data_offsets": [0, %s]}' % nested_array(deep, "16")
    header = ('{"w": %s}' % tensor).encode()
    header += b" " * (-len(header) % 8)
    reg("safetensors", "stack-overflow-data_offsets-deep%d.safetensors" % deep, struct.pack("<Q", len(header)) + header + b"\0" * 16)
    # A user-defined added token that is the tail of a character ("\x98\x80", of U+1F600): the
    # encoder matches it inside the character and hands the invalid rest to PCRE2 unchecked,
    # which reads past the text (heap-buffer-overflow).
    reg("bpe_vocab", "heap-overflow-added-token-tail-of-a-character.bin", records(("A", b"\x98\x80")))
    for name, vocab, tokenizer_keys, texts in model_seeds():
        if name == "bpe-partial-utf8-added":
            tensors = model_tensors(len(vocab.tokens))
            data = tensor_data(tensors, texts)
            meta = model_metadata(vocab, tokenizer_keys)
            reg("gguf", "heap-overflow-added-tokens-not-whole-characters.gguf", gguf_file(meta, tensors, data))
            reg("checkpoint", "heap-overflow-added-tokens-not-whole-characters.hearth", hearth_file(meta, tensors, data))
    # 2001 capture groups: every match start of PCRE2's interpreter copies a 32 KB frame.
    reg("bpe_vocab", "timeout-2001-capture-groups.bin", records(("R", MANY_GROUPS_REGEXES[2]), ("T", "ab" * 20 + "c")))
    # A regex that backtracks exponentially on a run of letters, after Llama-3's has split the text
    # into words: each word costs PCRE2's whole match limit (10M steps), 30 words several seconds
    # (with PCRE2's JIT; (*NO_JIT) takes the interpreter, slower still).
    words = " abcdefghijklmnopqrstuvwxyzab" * 30
    reg("bpe_vocab", "timeout-backtracking-no-jit.bin", records(("r", "0"), ("R", BACKTRACKING_WORDS), ("T", words)))
    reg("tokenizer_json", "timeout-backtracking-no-jit.json",
        with_texts(tokenizer_json(Vocab(), pre_splits(LLAMA3_REGEX, BACKTRACKING_WORDS)), {}, [words]))
    v = Vocab()
    tensors = model_tensors(len(v.tokens))
    meta = model_metadata(v, lambda m: (m.string("tokenizer.ggml.pre", "hearth"),
                                        m.strings("hearth.tokenizer.pre_split_regex", [LLAMA3_REGEX, BACKTRACKING_WORDS])))
    reg("gguf", "timeout-backtracking-no-jit.gguf", gguf_file(meta, tensors, tensor_data(tensors, [words])))


# ---------------------------------------------------------------------------------------------

def check():
    """Runs each generated seed through its fuzzer with HEARTH_FUZZ_VERBOSE=1 and prints what the
    target said of it (which seeds parse and load, which are refused and why)."""
    for target in sorted(os.listdir(CORPUS)):
        binary = os.path.join(ROOT, "build", "fuzz", "fuzz_" + target)
        if not os.path.exists(binary):
            continue
        for name in sorted(os.listdir(os.path.join(CORPUS, target))):
            if not name.startswith("gen-"):
                continue
            path = os.path.join(CORPUS, target, name)
            try:
                r = subprocess.run([binary, path, "-timeout=20", "-rss_limit_mb=4096",
                                    "-artifact_prefix=" + tempfile.gettempdir() + "/"], env=dict(os.environ, HEARTH_FUZZ_VERBOSE="1"),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
                out = r.stdout.decode("utf-8", "replace")
                said = [l[6:] for l in out.splitlines() if l.startswith("fuzz: ")]
                crash = [l for l in out.splitlines() if "ERROR:" in l or "SUMMARY:" in l]
                status = "CRASH " + crash[0][:100] if crash or r.returncode else "ok"
            except subprocess.TimeoutExpired:
                said, status = [], "HANG (60 s)"
            print("%-16s %-44s %-6s %s" % (target, name, status if status != "ok" else "", "; ".join(s[:70] for s in said[-2:])))


def main():
    # Generated seeds are named gen-*: remove the old ones first, so a seed that is no longer
    # generated does not linger.
    for where in (CORPUS, REGRESSIONS):
        for target in os.listdir(where) if os.path.isdir(where) else []:
            if not os.path.isdir(os.path.join(where, target)):
                continue
            for name in os.listdir(os.path.join(where, target)):
                if name.startswith("gen-"):
                    os.remove(os.path.join(where, target, name))
    write_dicts()
    write_hf_config()
    write_tokenizer_config()
    write_tokenizer_json()
    write_safetensors()
    write_models()
    write_forward_models()
    write_bpe_vocab()
    write_regressions()
    if "--check" in sys.argv[1:]:
        check()


if __name__ == "__main__":
    main()
