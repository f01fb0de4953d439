#!/usr/bin/env python3
"""Golden data for hearth's GGUF dequantizers (kernels/ref/dequant_gguf.cpp), made with gguf-py.

For each type: random but valid blocks (random bytes; fp16 scale fields set to finite,
moderate values so every result is finite), dequantized with gguf-py's numpy code, an
implementation independent of hearth's. Block 0 has every quant/scale byte 0x00, block 1
0xFF (the ends of every code range), block 2 a subnormal fp16 in its first fp16 field.

Run from the repository root, with gguf-py from a llama.cpp checkout on the path:
    PYTHONPATH=/path/to/llama.cpp/gguf-py /usr/bin/python3 tests/reference/make_dequant_goldens.py
Needs only numpy. Deterministic (fixed seed): re-running reproduces the file byte for byte.

Output, tests/data/dequant_goldens.bin, all integers uint32 little-endian:
    magic "HDQG", version 1, record count
    per record: ggml type id, block_size (elements), block_bytes, n_blocks,
                n_blocks * block_bytes raw block bytes,
                n_blocks * block_size float32 (little-endian) expected values
"""
import argparse
import struct

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf.quants import dequantize

# Byte offsets of the fp16 fields in each block (ggml-common.h); every other byte is a
# quant, scale or mask byte, for which any value is valid.
FP16_FIELDS = {
    T.Q4_1: [0, 2],     # d, m
    T.Q5_0: [0],        # d
    T.Q5_1: [0, 2],     # d, m
    T.Q2_K: [80, 82],   # d, dmin (after scales[16], qs[64])
    T.Q3_K: [108],      # d (after hmask[32], qs[64], scales[12])
    T.Q5_K: [0, 2],     # d, dmin
    T.IQ4_NL: [0],      # d
    T.IQ4_XS: [0],      # d (scales_h at 2 is a bit field)
}
N_BLOCKS = {32: 16, 256: 5}  # a few KB per type


def fp16_bits(rng, n):
    """Finite normal fp16 values of either sign, magnitude 2^-14 .. 4 (exponent field 1..17)."""
    sign = rng.integers(0, 2, n, dtype=np.uint16) << 15
    exp = rng.integers(1, 18, n, dtype=np.uint16) << 10
    mant = rng.integers(0, 1024, n, dtype=np.uint16)
    return sign | exp | mant


def make_blocks(rng, qtype, n_blocks):
    block_bytes = GGML_QUANT_SIZES[qtype][1]
    blocks = rng.integers(0, 256, (n_blocks, block_bytes), dtype=np.uint8)
    blocks[0, :] = 0x00
    blocks[1, :] = 0xFF
    for k, off in enumerate(FP16_FIELDS[qtype]):
        h = fp16_bits(rng, n_blocks)
        if k == 0:
            h[2] = 0x8000 | 0x0155  # a negative subnormal
        blocks[:, off:off + 2] = h.astype("<u2").view(np.uint8).reshape(n_blocks, 2)
    return blocks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", default="tests/data/dequant_goldens.bin")
    args = ap.parse_args()
    rng = np.random.default_rng(20260822)
    out = bytearray(b"HDQG" + struct.pack("<II", 1, len(FP16_FIELDS)))
    for qtype in FP16_FIELDS:
        block_size, block_bytes = GGML_QUANT_SIZES[qtype]
        n_blocks = N_BLOCKS[block_size]
        blocks = make_blocks(rng, qtype, n_blocks)
        values = dequantize(blocks.reshape(-1), qtype)
        assert values.dtype == np.float32 and values.shape == (n_blocks * block_size,)
        assert np.all(np.isfinite(values)), qtype.name
        out += struct.pack("<IIII", int(qtype), block_size, block_bytes, n_blocks)
        out += blocks.tobytes()
        out += values.astype("<f4").tobytes()
        print(f"{qtype.name:7s} id {int(qtype):2d}: {n_blocks} blocks of {block_bytes} bytes, "
              f"|x| <= {np.abs(values).max():.4g}")
    with open(args.out, "wb") as f:
        f.write(out)
    print(f"wrote {args.out}, {len(out)} bytes")


if __name__ == "__main__":
    main()
