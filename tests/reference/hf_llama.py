#!/usr/bin/python3
"""Plain PyTorch reference of Hugging Face's LlamaForCausalLM, MistralForCausalLM,
Qwen2ForCausalLM and Qwen3ForCausalLM forward passes.

Written from the published semantics of transformers' modeling_llama, modeling_mistral,
modeling_qwen2, modeling_qwen3 and modeling_rope_utils (no transformers import): RMSNorm in fp32,
rotate_half RoPE (with Llama-3's "llama3" frequency scaling), grouped-query
attention, causal softmax attention (with Mistral's sliding window: key k is seen
from query q when q - window < k <= q), Qwen2's q/k/v projection biases, Qwen3's q_norm/k_norm (RMSNorm over each
head's head_dim, before RoPE), SwiGLU MLP, optional tied lm_head, head_dim from
config.json when given (Qwen3's default 128).
All weights are converted to float32 and all compute is float32.

Library use:
    import hf_llama
    m = hf_llama.load_model("path/to/hf_folder")
    hf_llama.logits(m, [1, 2, 3])      # -> torch.Tensor [3, vocab] float32
    hf_llama.greedy(m, [1, 2, 3], 16)  # -> list of 16 ids

CLI:
    /usr/bin/python3 tests/reference/hf_llama.py FOLDER --ids 1,2,3 [-n 32]
"""
import argparse
import json
import math
import os
import struct

import numpy as np
import torch

torch.set_num_threads(2)

# ---------------------------------------------------------------- safetensors

_NP_DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    """Read a .safetensors file by hand. Returns {name: float32 torch.Tensor}."""
    with open(path, "rb") as f:
        data = f.read()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape = info["dtype"], info["shape"]
        start, end = info["data_offsets"]
        raw = data[base + start:base + end]
        n = int(np.prod(shape)) if shape else 1
        if dtype in _NP_DTYPES:
            arr = np.frombuffer(raw, dtype=_NP_DTYPES[dtype], count=n).astype(np.float32)
        elif dtype == "BF16":
            u16 = np.frombuffer(raw, dtype="<u2", count=n).astype(np.uint32)
            arr = (u16 << 16).view(np.float32)
        else:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {dtype}")
        if arr.nbytes != n * 4:
            raise ValueError(f"{path}: tensor {name}: size mismatch")
        out[name] = torch.from_numpy(arr.reshape(shape).copy())
    return out


def load_tensors(folder):
    single = os.path.join(folder, "model.safetensors")
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(single):
        return read_safetensors(single)
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        tensors = {}
        for shard in sorted(set(weight_map.values())):
            tensors.update(read_safetensors(os.path.join(folder, shard)))
        missing = set(weight_map) - set(tensors)
        if missing:
            raise ValueError(f"tensors listed in index but not found: {sorted(missing)}")
        return tensors
    raise FileNotFoundError(f"{folder}: no model.safetensors or model.safetensors.index.json")


# ---------------------------------------------------------------- model

class Model:
    pass


def load_model(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("hidden_act", "silu") != "silu":
        raise ValueError(f"hidden_act {cfg.get('hidden_act')} not supported")
    arch = (cfg.get("architectures") or [""])[0]
    family = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
              "Qwen3ForCausalLM": "qwen3"}.get(arch)
    if family is None:
        raise ValueError(f"architecture {arch} not supported")
    if cfg.get("attention_bias") or cfg.get("mlp_bias"):
        raise ValueError("attention/mlp bias not supported")
    m = Model()
    m.cfg = cfg
    m.family = family
    m.hidden = cfg["hidden_size"]
    m.n_layers = cfg["num_hidden_layers"]
    m.n_heads = cfg["num_attention_heads"]
    m.n_kv = cfg.get("num_key_value_heads") or m.n_heads
    # Qwen3Config's head_dim defaults to 128; Llama's and Mistral's to hidden / heads.
    m.head_dim = cfg.get("head_dim") or (128 if family == "qwen3" else m.hidden // m.n_heads)
    m.vocab = cfg["vocab_size"]
    m.eps = float(cfg.get("rms_norm_eps", 1e-6))
    m.theta = float(cfg.get("rope_theta", 10000.0))
    m.rope_scaling = cfg.get("rope_scaling")
    if m.rope_scaling is not None:
        rtype = m.rope_scaling.get("rope_type", m.rope_scaling.get("type"))
        if rtype not in ("llama3", "default"):
            raise ValueError(f"rope_scaling type {rtype} not supported by this reference")
        if rtype == "default":
            m.rope_scaling = None
    # MistralConfig: sliding_window 4096 unless given (null: none). Llama has none; Qwen3's
    # applies only with use_sliding_window.
    m.window = None
    if family == "mistral":
        m.window = cfg["sliding_window"] if "sliding_window" in cfg else 4096
    if family in ("qwen2", "qwen3") and cfg.get("use_sliding_window"):
        raise ValueError("use_sliding_window not supported by this reference")
    if m.n_heads % m.n_kv != 0:
        raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")

    t = load_tensors(folder)
    m.embed = t["model.embed_tokens.weight"]
    m.layers = []
    for i in range(m.n_layers):
        p = f"model.layers.{i}."
        m.layers.append({
            "attn_norm": t[p + "input_layernorm.weight"],
            "wq": t[p + "self_attn.q_proj.weight"],
            "wk": t[p + "self_attn.k_proj.weight"],
            "wv": t[p + "self_attn.v_proj.weight"],
            "wo": t[p + "self_attn.o_proj.weight"],
            "mlp_norm": t[p + "post_attention_layernorm.weight"],
            "gate": t[p + "mlp.gate_proj.weight"],
            "up": t[p + "mlp.up_proj.weight"],
            "down": t[p + "mlp.down_proj.weight"],
        })
        if family == "qwen2":  # Qwen2Attention: q/k/v_proj with bias=True
            for k, name in (("bq", "q_proj"), ("bk", "k_proj"), ("bv", "v_proj")):
                m.layers[-1][k] = t[p + f"self_attn.{name}.bias"]
        if family == "qwen3":
            m.layers[-1]["q_norm"] = t[p + "self_attn.q_norm.weight"]
            m.layers[-1]["k_norm"] = t[p + "self_attn.k_norm.weight"]
            assert m.layers[-1]["q_norm"].shape == (m.head_dim,)
    m.norm = t["model.norm.weight"]
    if cfg.get("tie_word_embeddings", False) or "lm_head.weight" not in t:
        m.lm_head = m.embed
    else:
        m.lm_head = t["lm_head.weight"]
    assert m.embed.shape == (m.vocab, m.hidden), m.embed.shape
    assert m.lm_head.shape == (m.vocab, m.hidden), m.lm_head.shape
    return m


def rms_norm(x, w, eps):
    # HF LlamaRMSNorm: computed in fp32, then scaled by weight.
    var = x.pow(2).mean(-1, keepdim=True)
    return (x * torch.rsqrt(var + eps)) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


def llama3_inv_freq(inv_freq, rs):
    # transformers' _compute_llama3_parameters (modeling_rope_utils.py), step by step.
    factor = rs["factor"]
    low_freq_factor = rs["low_freq_factor"]
    high_freq_factor = rs["high_freq_factor"]
    old_context_len = rs["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def rope_cos_sin(n, head_dim, theta, rope_scaling=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    if rope_scaling is not None:
        inv_freq = llama3_inv_freq(inv_freq, rope_scaling)
    pos = torch.arange(n, dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq)             # [n, hd/2]
    emb = torch.cat((freqs, freqs), dim=-1)        # [n, hd]
    return emb.cos(), emb.sin()


@torch.no_grad()
def logits(m, ids):
    ids = torch.tensor(list(ids), dtype=torch.long)
    n = ids.shape[0]
    hd = m.head_dim
    x = m.embed[ids]                                # [n, hidden]
    cos, sin = rope_cos_sin(n, hd, m.theta, m.rope_scaling)  # [n, hd]
    mask = torch.full((n, n), float("-inf")).triu(1)
    if m.window is not None:
        # transformers' sliding_window_overlay: key k is seen from query q when k > q - window.
        q_idx = torch.arange(n).view(-1, 1)
        k_idx = torch.arange(n).view(1, -1)
        mask = mask.masked_fill(k_idx <= q_idx - m.window, float("-inf"))
    group = m.n_heads // m.n_kv
    for L in m.layers:
        h = rms_norm(x, L["attn_norm"], m.eps)
        q, k, v = h @ L["wq"].T, h @ L["wk"].T, h @ L["wv"].T
        if m.family == "qwen2":                      # the projections' biases
            q, k, v = q + L["bq"], k + L["bk"], v + L["bv"]
        q = q.view(n, m.n_heads, hd).transpose(0, 1)   # [H, n, hd]
        k = k.view(n, m.n_kv, hd).transpose(0, 1)      # [KV, n, hd]
        v = v.view(n, m.n_kv, hd).transpose(0, 1)
        if m.family == "qwen3":                      # Qwen3RMSNorm over each head, before RoPE
            q = rms_norm(q, L["q_norm"], m.eps)
            k = rms_norm(k, L["k_norm"], m.eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(group, dim=0)        # HF repeat_kv
        v = v.repeat_interleave(group, dim=0)
        scores = (q @ k.transpose(1, 2)) / math.sqrt(hd) + mask
        probs = torch.softmax(scores.float(), dim=-1)
        a = (probs @ v).transpose(0, 1).reshape(n, m.n_heads * hd)
        x = x + a @ L["wo"].T
        h = rms_norm(x, L["mlp_norm"], m.eps)
        g = torch.nn.functional.silu(h @ L["gate"].T)
        u = h @ L["up"].T
        x = x + (g * u) @ L["down"].T
    x = rms_norm(x, m.norm, m.eps)
    return (x @ m.lm_head.T).float().contiguous()


def greedy(m, prompt_ids, n, n_pieces=None):
    """n_pieces: only ids below it are picked (ids past the tokenizer's pieces, padding rows
    of the embedding, have no text; hearth never samples them)."""
    ids = list(prompt_ids)
    out = []
    for _ in range(n):
        row = logits(m, ids)[-1]
        if n_pieces is not None:
            row = row[:n_pieces]
        nxt = int(torch.argmax(row))
        ids.append(nxt)
        out.append(nxt)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--ids", required=True, help="comma-separated prompt ids, e.g. 1,9038,2501")
    ap.add_argument("-n", type=int, default=32, help="number of greedy tokens (default 32)")
    a = ap.parse_args()
    m = load_model(a.folder)
    prompt = [int(s) for s in a.ids.split(",") if s.strip()]
    print(",".join(str(i) for i in greedy(m, prompt, a.n)))


if __name__ == "__main__":
    main()
