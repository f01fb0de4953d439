#!/usr/bin/python3
"""Varied texts for the differential test of hearth's tokenizers against llama.cpp's.

    tests/reference/make_tokenizer_diff_texts.py [-n 4000] [--seed 20261129] -o texts.json

Writes a JSON list of strings, deterministic for a seed (Python's own `random`, no other
package). Every text is valid UTF-8 (no lone surrogates) and not empty. Each is a random mix
of fragments of the kinds a tokenizer handles differently:

  * words in several scripts: Latin with accents (composed and decomposed), Cyrillic, Greek,
    Arabic, Hebrew, Devanagari, Thai, CJK, Hangul (syllables and conjoining jamo), kana;
  * emoji: plain, with skin tones, ZWJ sequences, flags, keycaps, variation selectors;
  * combining marks stacked on letters and on nothing;
  * digit runs of every length 1..40 (Llama-3 splits them by 3), other Unicode digits and
    numbers (Arabic-Indic, Devanagari, fullwidth, superscripts, Roman numerals, fractions);
  * contractions in every case ('s 'T 'LL 'Re ...) and with curly apostrophes;
  * whitespace runs: spaces, tabs, \\r\\n, \\n\\n\\n, NBSP, ideographic space, the other
    Unicode spaces (U+2000..U+200A, U+2028/2029, U+205F, U+180E, U+FEFF, U+0085, U+000B/C);
  * punctuation runs, code snippets, URLs, very long words (up to 600 letters);
  * texts spelled like special tokens (<|eot_id|>, <|im_end|>, <s>, </s>, <think>, [INST]);
  * leading and trailing spaces and newlines; control characters and NUL.

The first texts are hand-picked edge cases; the rest are random mixes. Used by
make_tokenizer_diff_goldens.py, which asks llama.cpp's llama-tokenize for their ids.
"""
import argparse
import json
import random

LATIN = ["hello", "world", "Café", "crème", "brûlée", "naïve", "façade", "Ångström", "Øresund", "Łódź", "straße",
         "Ærøskøbing", "señor", "mañana", "İstanbul", "ıi", "ǅemal", "ﬁne", "Œuvre", "żółć", "Tiếng", "Việt",
         "résumé", "coöperate", "the", "The", "THE", "a", "I", "quick", "brown", "fox", "jumps", "over", "lazy", "dog"]
# decomposed accents (NFD): Qwen's tokenizer.json normalizes them to NFC, llama.cpp does not
DECOMPOSED = ["Cafe\u0301", "cre\u0300me", "n\u0303", "A\u030a", "o\u0308", "u\u0308ber", "e\u0301te\u0301",
              "\u1100\u1161\u11a8", "\u1112\u1161\u11ab"]
CYRILLIC = ["Привет", "мир", "Как", "дела", "Ёжик", "в", "тумане", "ЩЪЫЬ", "їжак", "ґанок", "Љубав"]
GREEK = ["Καλημέρα", "κόσμε", "αβγδ", "ΑΒΓΔ", "ἀρχή", "ῥυθμός", "ΣΊΣΥΦΟΣ", "ς"]
ARABIC = ["مرحبا", "بالعالم", "كيف", "حالك", "؟", "،", "ﷺ", "لا", "ٱلرَّحْمَٰنِ"]
HEBREW = ["שלום", "עולם", "מה", "שלומך", "בְּרֵאשִׁית", "״", "׳"]
DEVANAGARI = ["नमस्ते", "दुनिया", "आप", "कैसे", "हैं", "क्षत्रिय", "ॐ", "।"]
THAI = ["สวัสดีชาวโลก", "ภาษาไทย", "ไม่มีช่องว่าง", "กรุงเทพมหานคร", "๑๒๓"]
CJK = ["你好", "世界", "我爱自然语言处理", "日本語", "テキスト", "カタカナ", "ひらがな", "漢字", "𠀋𡈽", "々", "〇", "ｶﾀｶﾅ", "ＡＢＣ"]
HANGUL = ["한국어", "텍스트입니다", "안녕하세요", "ㄱㄴㄷ", "각"]
OTHER_SCRIPTS = ["Ողջույն", "გამარჯობა", "ሰላም", "வணக்கம்", "ಕನ್ನಡ", "ພາສາລາວ", "မြန်မာ", "ខ្មែរ", "ᚠᚢᚦ", "𐌰𐌱", "ᏣᎳᎩ"]
EMOJI = ["😀", "😃😄", "👍", "👍🏽", "👋🏿", "❤️", "❤", "✨", "🔥", "🎉", "🚀", "🤖", "🧠",
         "👨‍👩‍👧‍👦", "🏳️‍🌈", "🧑🏿‍💻", "👩🏽‍🚀", "🏴‍☠️", "🇫🇷", "🇩🇪🇯🇵", "🇺🇸", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "1️⃣", "#️⃣", "*️⃣",
         "☺︎", "✌🏻", "🫶🏼", "🫠", "🦄", "💩", "🇦", "‍", "️"]
COMBINING = ["\u0301", "\u0300", "\u0308", "\u0327", "\u0323\u0302", "\u20dd", "\u0336", "\u0489", "\u093f", "\u0e31",
             "\u05b0", "\u064b", "\u302a", "\u1ab0", "\u0345"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r", " \n", "\n ", " \t ",
          "\u00a0", "\u3000", "\u2000", "\u2002", "\u2003", "\u2009", "\u200a", "\u2028", "\u2029", "\u205f",
          "\u180e", "\ufeff", "\u0085", "\u000b", "\u000c", "\u1680", "\u202f", "\u200b", "\u200c", "\u200d",
          "\u2060", "        ", "\n\t", " \u00a0 ", "\u00a0\u00a0"]
PUNCT = [".", ",", "!", "?", "...", "…", "!!!", "?!", "--", "—", "–", ";", ":", "\"", "'", "''", "``", "(", ")",
         "[", "]", "{", "}", "<", ">", "<<", ">>=", "«", "»", "„", "“", "”", "‘", "’", "¿", "¡", "§", "¶", "©",
         "®", "™", "°", "€", "$", "£", "¥", "₹", "%", "‰", "&", "&&", "||", "|", "\\", "/", "//", "#", "##", "@",
         "^", "~", "`", "```", "*", "**", "_", "__", "+", "=", "==", "===", "!=", "->", "=>", "::", "・", "。", "、",
         "，", "！", "？", "：", "「", "」", "【", "】", "《", "》", "·", "•", "‽", "⁂", "☃", "♥", "→", "∑", "∀x∈ℝ",
         "√2", "≠", "≤"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "'Ll",
                "'lL", "'Re", "’s", "’t", "’ll", "’S", "ʼs", "`s"]
CONTRACTED = ["it's", "IT'S", "don't", "DON'T", "Don'T", "we'll", "WE'LL", "they're", "I've", "I'm", "I'd",
              "she'S", "you’re", "can’t", "I’LL", "'tis", "'s", "rock'n'roll", "o'clock", "O'Neil", "l'homme",
              "d'Artagnan", "''s", "'''", "x'", "''"]
NUMBERS = ["٣", "٠١٢٣٤٥٦٧٨٩", "४२", "१२३४", "１２３", "²", "³", "¹⁰", "½", "¾", "⅓", "Ⅻ", "ⅷ", "①②", "๕", "໒",
           "፩", "𝟘𝟙𝟚", "〡〢", "3.14159", "2,718", "1e10", "0x1F", "-42", "+7", "100%", "1/2", "10:30", "v1.2.3",
           "2024-11-29", "$1,000,000.00", "1_000_000"]
CODE = ["def f(x):\n    return x ** 2  # square\n", "int main() { return 0; }", "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}",
        "if x == 1:\n\tpass\nelse:\n\tprint('no')", "const f = (a, b) => a + b;", "<div class=\"a\">Hi</div>",
        "SELECT * FROM t WHERE id = 42;", "#include <stdio.h>\n", "    \n    \n", "x=[1,2,3];y={'a':1}",
        "fn main() -> Result<(), Box<dyn Error>> {", "$ ls -la | grep foo > out.txt 2>&1", "λx.x", "a->b->c",
        "// comment\n/* block */", "\"\"\"docstring\"\"\"", "{{template}}", "${HOME}/bin", "0b1010 | 0o777",
        "\\n\\t\\r", "@decorator\nclass A(B):", "<?php echo $x; ?>", "[[1, 2], [3, 4]]", "key: value\n  - item"]
URLS = ["https://example.com/path?q=1&r=two#frag", "http://127.0.0.1:8080/", "www.wikipedia.org/wiki/Straße",
        "mailto:user@example.com", "ftp://files.example.org/a/b/c.tar.gz", "https://xn--nxasmq6b.com",
        "user.name+tag@sub.domain.co.uk", "C:\\Users\\me\\file.txt", "/usr/local/bin/python3",
        "https://例え.jp/パス", "git@github.com:owner/repo.git"]
SPECIAL_LOOKING = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
                   "<|eom_id|>", "<|python_tag|>", "<|reserved_special_token_0|>", "<|reserved_special_token_250|>",
                   "<|finetune_right_pad_id|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|fim_prefix|>",
                   "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
                   "<|vision_start|>", "<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>",
                   "<s>", "</s>", "<unk>", "<pad>", "[INST]", "[/INST]", "<<SYS>>", "<|", "|>", "<|eot_id", "eot_id|>",
                   "< s >", "<S>", "<|EOT_ID|>", "<|im_end|>\n<|im_start|>assistant\n"]
CONTROL = ["\x00", "\x01", "\x07", "\x1b[31m", "\x7f", "\x1f", "\u0080", "\u009f", "\ufffd", "\ufffe", "\uffff",
           "\U0010ffff", "\U000e0001", "\ue000", "\U000f0000", "\u00ad", "\u061c", "\u200e", "\u200f", "\u202e"]
WORD_LISTS = [LATIN, LATIN, LATIN, DECOMPOSED, CYRILLIC, GREEK, ARABIC, HEBREW, DEVANAGARI, THAI, CJK, HANGUL,
              OTHER_SCRIPTS]


def digits(r):
    n = r.choice([r.randint(1, 12), r.randint(1, 40)])
    s = "".join(r.choice("0123456789") for _ in range(n))
    return s if r.random() < 0.7 else r.choice(["", " ", "-", "+", "$", "a", "x", ".", "v"]) + s + r.choice(["", " ", "%", "px", "k", ".", "th"])


def long_word(r):
    pool = r.choice([LATIN, CYRILLIC, CJK, THAI, DEVANAGARI, HANGUL, ["a"], ["ab"], ["x"], ["ё"], ["😀"]])
    n = r.choice([r.randint(20, 80), r.randint(100, 600)])
    out = ""
    while len(out) < n:
        out += r.choice(pool)
    return out[:n]


def fragment(r):
    kind = r.random()
    if kind < 0.30:
        return r.choice(r.choice(WORD_LISTS))
    if kind < 0.40:
        return r.choice(SPACES)
    if kind < 0.48:
        return "".join(r.choice(PUNCT) for _ in range(r.randint(1, 4)))
    if kind < 0.55:
        return digits(r)
    if kind < 0.61:
        return "".join(r.choice(EMOJI) for _ in range(r.randint(1, 3)))
    if kind < 0.65:
        base = r.choice(["a", "e", "o", "x", "", " ", "ا", "क", "ก", "1", "😀", "\n"])
        return base + "".join(r.choice(COMBINING) for _ in range(r.randint(1, 4)))
    if kind < 0.71:
        return r.choice(CONTRACTED) if r.random() < 0.6 else r.choice(LATIN) + r.choice(CONTRACTIONS)
    if kind < 0.75:
        return r.choice(NUMBERS)
    if kind < 0.79:
        return r.choice(CODE)
    if kind < 0.82:
        return r.choice(URLS)
    if kind < 0.87:
        return r.choice(SPECIAL_LOOKING)
    if kind < 0.89:
        return r.choice(CONTROL)
    if kind < 0.92:
        return long_word(r)
    # a run of one whitespace kind
    return r.choice(SPACES) * r.randint(2, 9)


def random_text(r):
    parts = []
    for _ in range(r.choice([1, 2, 3, 5, 8, 13, 20, 40])):
        parts.append(fragment(r))
        # words are usually separated by one space
        if r.random() < 0.55:
            parts.append(" ")
    text = "".join(parts)
    if r.random() < 0.15:
        text = r.choice([" ", "  ", "\n", "\t", "\u00a0", "\r\n", "   \n"]) + text
    if r.random() < 0.15:
        text += r.choice([" ", "  ", "\n", "\n\n", "\t", "\u3000", " \n "])
    return text


EDGE_CASES = [
    " ", "  ", "\n", "\n\n\n", "\t", "\r\n", "\u00a0", "\u3000", " a", "a ", " a ", "  a  ", "a\n", "\na",
    "1", "12", "123", "1234", "12345", "123456", "1234567", "12345678901234567890", " 1234", "a1234b",
    "'s", "'S", "'LL", "it's", "IT'S", "we'LL", "you’re", "'", "''", "'''s", "'\n", "a'", "'s'",
    "<|eot_id|>", "<|im_end|>", "<s>", "</s>", "<think>", "</think>", "<|endoftext|>", "a<|eot_id|>b",
    "  <|eot_id|>  ", "<think>\n\n</think>\n\n", "<tool_call>\n{\"a\": 1}\n</tool_call>",
    "Hello world", "Hello  world", "Hello\u00a0world", "Hello\u3000world", "Hello \n world",
    "\u00e9", "e\u0301", "\u1100\u1161\u11a8", "\uac01", "👨‍👩‍👧‍👦", "🇫🇷🇩🇪", "👍🏽", "1️⃣",
    "a\u0301\u0302\u0303", "\u0301", " \u0301", "\n\u0301",
    "\u180e", " \u180e", "a \u180e b", "  \u180e\u180e  ", "\t\u180e\n", "<|fim_prefix|>x<|fim_suffix|>y<|fim_middle|>",
    "<|repo_name|>r\n<|file_sep|>f.py\n<|fim_pad|>",
    "\x00", "a\x00b", "\ufeffBOM", "\U0010ffff", "\ufffd",
    "    indented\n        more\n", "\t\tx", "x\t\t", "a \n\n b", "a  \n  b", " \r\n ",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=4000, help="how many texts (default 4000, edge cases included)")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    r = random.Random(a.seed)
    texts = list(EDGE_CASES)
    while len(texts) < a.n:
        t = random_text(r)
        if t:
            texts.append(t)
    for t in texts:
        t.encode("utf-8")  # raises on a lone surrogate
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(texts[: a.n], f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
