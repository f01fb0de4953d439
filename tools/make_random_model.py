#!/usr/bin/python3
"""Writes a random-weight Llama as a Hugging Face folder, for benchmarks only.

    tools/make_random_model.py OUT_DIR --shape tinyllama|llama2-7b|qwen0.5b|tiny [--tokenizer FILE]
    tools/make_random_model.py OUT_DIR --shape tiny --tokenizer-json FILE [--tokenizer-config FILE] --vocab N

Weights are N(0, 0.02) in F16 (norm weights 1), written in chunks so memory stays small.
Speed does not depend on the values, so random weights measure it as well as real ones.
The Llama-2 tokenizer (32000 pieces) from tests/data is copied in, or with --tokenizer-json a
byte-level BPE tokenizer.json (and tokenizer_config.json); the embedding gets --vocab rows.
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np

SHAPES = {
    # name: hidden, intermediate, layers, heads, kv heads, vocab
    "tinyllama": (2048, 5632, 22, 32, 4, 32000),
    "llama2-7b": (4096, 11008, 32, 32, 32, 32000),
    "tiny": (64, 128, 1, 1, 1, 32000),  # for what does not depend on the model: tokenizing
    # Qwen2.5-0.5B's matrices (dim 896, no multiple of 256: llama.cpp's K-quant mixes put Q5_0 /
    # Q5_1 there) as a Llama on the Llama-2 vocabulary.
    "qwen0.5b": (896, 4864, 24, 14, 2, 32000),
}


def tensor_list(hidden, inter, layers, heads, kv, vocab):
    hd = hidden // heads
    out = [("model.embed_tokens.weight", (vocab, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", (hidden,)),
            (p + "self_attn.q_proj.weight", (heads * hd, hidden)),
            (p + "self_attn.k_proj.weight", (kv * hd, hidden)),
            (p + "self_attn.v_proj.weight", (kv * hd, hidden)),
            (p + "self_attn.o_proj.weight", (hidden, heads * hd)),
            (p + "post_attention_layernorm.weight", (hidden,)),
            (p + "mlp.gate_proj.weight", (inter, hidden)),
            (p + "mlp.up_proj.weight", (inter, hidden)),
            (p + "mlp.down_proj.weight", (hidden, inter)),
        ]
    out += [("model.norm.weight", (hidden,)), ("lm_head.weight", (vocab, hidden))]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--tokenizer", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "llama2-tokenizer.model"))
    ap.add_argument("--tokenizer-json", help="a tokenizer.json to copy in instead of the tokenizer.model")
    ap.add_argument("--tokenizer-config", help="a tokenizer_config.json to copy in")
    ap.add_argument("--vocab", type=int, help="embedding rows (default: the shape's)")
    a = ap.parse_args()
    hidden, inter, layers, heads, kv, vocab = SHAPES[a.shape]
    vocab = a.vocab or vocab
    os.makedirs(a.out, exist_ok=True)
    tensors = tensor_list(hidden, inter, layers, heads, kv, vocab)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in tensors:
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    hjson = json.dumps(header).encode()
    hjson += b" " * (-len(hjson) % 8)
    rng = np.random.default_rng(0)
    tmp = os.path.join(a.out, "model.safetensors.partial")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for name, shape in tensors:
            if len(shape) == 1:
                f.write(np.ones(shape, dtype=np.float16).tobytes())
                continue
            rows_per_chunk = max(1, (1 << 24) // shape[1])
            for r in range(0, shape[0], rows_per_chunk):
                rows = min(rows_per_chunk, shape[0] - r)
                chunk = rng.standard_normal((rows, shape[1]), dtype=np.float32) * 0.02
                f.write(chunk.astype(np.float16).tobytes())
    os.replace(tmp, os.path.join(a.out, "model.safetensors"))
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
        "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv, "vocab_size": vocab, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "max_position_embeddings": 2048, "tie_word_embeddings": False, "hidden_act": "silu",
        "torch_dtype": "float16", "bos_token_id": 1, "eos_token_id": 2,
    }
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if a.tokenizer_config:
        shutil.copy(a.tokenizer_config, os.path.join(a.out, "tokenizer_config.json"))
    if a.tokenizer_json:
        shutil.copy(a.tokenizer_json, os.path.join(a.out, "tokenizer.json"))
    else:
        shutil.copy(a.tokenizer, os.path.join(a.out, "tokenizer.model"))
    print(f"wrote {a.out}: {a.shape}, {offset / 1e9:.2f} GB of F16 weights")


if __name__ == "__main__":
    main()
