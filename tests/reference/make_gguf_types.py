#!/usr/bin/python3
"""Small GGUF files in GGUF's other quantized types (and K-quant mixes that hold them), made by
llama.cpp's own llama-quantize, and their reference goldens (tests/data/gguf-types/).

    LLAMA_CPP=PATH/TO/llama.cpp PYTHONPATH=PATH/TO/llama.cpp/gguf-py \\
        /usr/bin/python3 tests/reference/make_gguf_types.py

1. A random Llama (dim 256, hidden 512, 1 layer, 4 heads / 2 kv heads, untied, vocabulary
   512 = the parity tokenizer; weights N(0, 0.1) so that greedy choices are not near-ties)
   is written as a Hugging Face folder and converted to an f16 GGUF by hearth's quantize
   (build hearth first). tiny320 is the same with dim 320 (5 heads / 1 kv head) and hidden 768:
   rows of 320 are no multiple of 256, so llama-quantize's K-quant mixes put GGUF's 32-element
   types there (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0), as in Qwen2.5-0.5B's (dim 896) files.
   tied128 is smaller (dim 128, hidden 256, 2 heads / 1 kv head) with tied embeddings (no
   lm_head: token_embd is the output matrix too), for BF16, whose 2 bytes a weight would make
   tiny's file 1.7 MB. hd64 is a Llama whose heads are wider than dim / heads (config.json's
   head_dim 64 with dim 128 and 4 heads; the GGUF says llama.attention.key_length 64), as some
   fine-tunes and pruned models are.
2. llama.cpp's llama-quantize (LLAMA_CPP/build/bin) makes one file per type from it (BF16: every
   matrix converted, the token embedding too; the norms stay F32).
3. gguf_llama.py (PyTorch on gguf-py's dequantization) gives each file's greedy ids and
   logits: mini-style goldens, and the greedy margin is printed.
The f16 file is not kept: it is hearth's own, and the point is llama.cpp's blocks.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests/data/gguf-types")
# (model, llama-quantize type): the file tests/data/gguf-types/MODEL-TYPE.gguf.
FILES = [("tiny", t) for t in ["Q2_K", "Q3_K_M", "Q5_K_M", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "IQ4_XS"]] + \
        [("tiny320", "Q4_K_M"), ("tiny320", "Q5_K_M"), ("tied128", "BF16"), ("hd64", "Q8_0")]
# dim, hidden, heads, kv heads, tied embeddings, head_dim (None: dim / heads)
MODELS = {"tiny": (256, 512, 4, 2, False, None), "tiny320": (320, 768, 5, 1, False, None),
          "tied128": (128, 256, 2, 1, True, None), "hd64": (128, 256, 4, 2, False, 64)}
PROMPT = "1,400,300,200,100"


def write_folder(folder, model):
    (dim, hidden, heads, kv, tied, head_dim), layers, vocab = MODELS[model], 1, 512
    hd = head_dim or dim // heads
    rng = np.random.default_rng(20261123)
    tensors = [("model.embed_tokens.weight", (vocab, dim))]
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors += [(p + "input_layernorm.weight", (dim,)), (p + "self_attn.q_proj.weight", (heads * hd, dim)),
                    (p + "self_attn.k_proj.weight", (kv * hd, dim)), (p + "self_attn.v_proj.weight", (kv * hd, dim)),
                    (p + "self_attn.o_proj.weight", (dim, heads * hd)), (p + "post_attention_layernorm.weight", (dim,)),
                    (p + "mlp.gate_proj.weight", (hidden, dim)), (p + "mlp.up_proj.weight", (hidden, dim)),
                    (p + "mlp.down_proj.weight", (dim, hidden))]
    tensors += [("model.norm.weight", (dim,))] + ([] if tied else [("lm_head.weight", (vocab, dim))])
    header, blobs, at = {}, [], 0
    for name, shape in tensors:
        a = (1 + rng.normal(0, 0.2, shape) if len(shape) == 1 else rng.normal(0, 0.1, shape)).astype(np.float16)
        b = a.tobytes()
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": dim, "intermediate_size": hidden,
           "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
           "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": tied, "bos_token_id": 1, "eos_token_id": 2}
    if head_dim:
        cfg["head_dim"] = head_dim
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(ROOT, "tests/data/parity/mha/tokenizer.model"), "rb") as src, \
            open(os.path.join(folder, "tokenizer.model"), "wb") as dst:
        dst.write(src.read())


def main():
    """Makes every file, or those named as arguments (e.g. tiny320-Q4_K_M)."""
    llama_cpp = os.environ.get("LLAMA_CPP")
    if not llama_cpp:
        sys.exit("set LLAMA_CPP to a llama.cpp checkout with build/bin/llama-quantize")
    wanted = [f for f in FILES if not sys.argv[1:] or f"{f[0]}-{f[1]}" in sys.argv[1:]]
    scratch = os.path.join(ROOT, "build/gguf-types")
    os.makedirs(OUT, exist_ok=True)
    for model in sorted({m for m, _ in wanted}):
        write_folder(os.path.join(scratch, model), model)
        base = os.path.join(scratch, f"{model}-f16.gguf")
        subprocess.run([os.path.join(ROOT, "quantize"), os.path.join(scratch, model), base, "f16", "-q"], check=True)
        for m, t in wanted:
            if m != model:
                continue
            out = os.path.join(OUT, f"{model}-{t}.gguf")
            subprocess.run([os.path.join(llama_cpp, "build/bin/llama-quantize"), base, out, t], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run([sys.executable, os.path.join(ROOT, "tests/reference/gguf_llama.py"), out, "--ids", PROMPT, "-n",
                            "16", "-o", os.path.join(OUT, f"{model}-{t}.golden.json")], check=True)


if __name__ == "__main__":
    main()
