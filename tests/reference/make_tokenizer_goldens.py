#!/usr/bin/python3
"""Record python-sentencepiece encodings of tricky strings, for tokenizer parity tests.

    /usr/bin/python3 tests/reference/make_tokenizer_goldens.py MODEL.model [MODEL2.model ...] -o OUT.json

Output: {"<basename of model>": [{"text": s, "ids": [...], "pieces": [...], "decoded": "..."}, ...], ...}
ids come from sp.encode(s, out_type=int) (no BOS/EOS added); pieces are the
matching piece strings (for debugging only); decoded is sp.decode(ids).
The file is UTF-8 JSON (non-ASCII characters written literally), one case per line.
"""
import argparse
import json
import os

import sentencepiece as spm

try:
    import torch
    torch.set_num_threads(2)
except ImportError:
    pass

PARAGRAPH = (
    "Now, good my lord, what say you to the matter? Thou art as fair as is the morning "
    "sun, and yet thy heart is colder than December's frost. O, speak again, bright angel! "
    "For I have heard the nightingale's complaint, and wept to hear it; yet I'll not be "
    "moved by tears, nor sighs, nor any lover's vows. Away, I say! The hour grows late."
)

STRINGS = [
    "",
    " ",
    "Hello world",
    "  two leading spaces",
    "runs   of    spaces",
    "tab\there",
    "line1\nline2\n\nline4",
    "digits 1234567890 3.14159",
    "accents: café naïve Ærøskøbing",
    "CJK: 你好世界 日本語のテキスト",
    "emoji: 😀🚀👍🏽",
    "mixed: ça va? 東京 🍣 42",
    "ALL CAPS AND lower",
    "punctuation!?.,;:'\"()[]{}",
    "trailing space ",
    "a",
    PARAGRAPH,
]


def goldens_for(path):
    sp = spm.SentencePieceProcessor(model_file=path)
    cases = []
    for s in STRINGS:
        ids = sp.encode(s, out_type=int)
        cases.append({
            "text": s,
            "ids": ids,
            "pieces": [sp.id_to_piece(i) for i in ids],
            "decoded": sp.decode(ids),
        })
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    result = {}
    for path in a.models:
        key = os.path.basename(path)
        if key in result:
            raise SystemExit(f"two models share the basename {key!r}; rename one")
        result[key] = goldens_for(path)
    parts = []
    for key, cases in result.items():
        lines = ",\n    ".join(json.dumps(c, ensure_ascii=False) for c in cases)
        parts.append(f"  {json.dumps(key)}: [\n    {lines}\n  ]")
    text = "{\n" + ",\n".join(parts) + "\n}\n"
    assert json.loads(text) == result
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(text)
    for key, cases in result.items():
        print(f"{key}: {len(cases)} cases, {sum(len(c['ids']) for c in cases)} ids")


if __name__ == "__main__":
    main()
