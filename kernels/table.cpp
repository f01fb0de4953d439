// The kernel table (kernels/table.h). The rows of one (op, type, layout) are listed in order of
// preference: for a given token count the picker takes the available row with the largest
// min_tokens not above it, and among rows of equal min_tokens the last one.
//
// Thresholds, and why:
//  - F32, F16 and BF16 (kernels/matmul_float.cpp): the AVX2 rows from 1 token, the 3-row tiles
//    from 24; on ARM the scalar row, whose dot products are NEON's. TinyLlama shape f16, 2
//    threads, Zen 5, alternated, medians of 3, rows / tiles: pp16 65.0 / 57.3, pp32 58.4 / 60.9,
//    pp64 58.7 / 61.8, pp256 57.6 / 60.2 tok/s. No AVX-512 BF16 (vdpbf16ps) row: generation is
//    memory-bound, and the AVX2 row reads bf16 as fast as f16 (tools/bench_kernels 16384 x 4096,
//    1 token, AMD EPYC Zen 4 with one core busy with other work, 3 alternated runs, GB/s of
//    weights, f16 / bf16: 1 thread 18.8, 17.1, 19.4 / 20.0, 22.2, 21.0; 2 threads 25.3, 24.5, 16.8
//    / 26.0, 39.9, 33.5).
//  - AVX2 GEMMs (x86/gemm_avx2.cpp, gemm_k_avx2.cpp) on plain rows from 4 tokens (Q4_0, Q8_0),
//    8 (Q4_K), 16 (Q6_K): the break-even batch sizes against the tiles, from tools/bench_kernels
//    (Q4_K/Q6_K pack more per row than Q4_0/Q8_0). Q4_0 x one token: the 4-row gemv.
//  - Interleaved Q4_0/Q8_0: the AVX2 GEMM from 4 tokens, as on plain rows; but for Q4_0 in a
//    build without VNNI, the few-token kernel (x86/few_q4_0x8_avx2.cpp: two tokens to a vector,
//    nothing packed) from 4 tokens on, prompts included. On the AMD EPYC Zen 3 host (2 vCPUs,
//    AVX2 only; a shared VM, noise ~10-20%), few-token kernel / GEMM: tools/bench_kernels
//    (32768 x 2048, 2 threads, GB/s of weights, medians of 3) 4 tokens 15.5 / 11.3, 8: 9.1 / 7.0,
//    12: 5.9 / 5.2, 16: 4.6 / 4.1, 24: 3.1 / 2.9, 32: 2.3 / 2.0; run --bench (2 threads, medians
//    of 5 (7B: 3) alternated runs, tok/s) TinyLlama q4_0 8 sequences 107.0 / 85.7, 4 sequences
//    78.9 / 64.9, pp512 117.2 / 110.7; Llama-2-7B q4_0 8 sequences 17.9 / 13.7, pp128 20.0 / 18.1
//    (docs/benchmarks.md, "A few tokens on AVX2"). With AVX-512, the
//    few-token kernel (x86/gemv_avx512.cpp: each record read once for up to 8 tokens, nothing
//    packed) from 1 token up to 15 (listed again at 4, to take over from the AVX2 GEMM there), the
//    zmm GEMM from 16. Measured with tools/bench_kernels
//    (32768 x 2048, all rows, 1 thread, CPU time: GB/s of weights; a shared 2-vCPU Sapphire Rapids
//    Xeon at load 5-7, best of 5), few-token kernel / the row it replaced / zmm GEMM:
//      q4_0: 1 token 23.4 / 23.8 (AVX2 rows) / 12.5; 2 tokens 21.9 / 14.5 (AVX2 rows) / 12.5;
//            4: 16.5 / 10.5 (AVX2 GEMM) / 12.4; 8: 14.0 / 11.9 (zmm GEMM) / 11.9; 12: 8.8 / 7.0; 16: 6.8 / 6.8
//      q8_0: 1 token 21.8 / 20.8 / 13.0; 2: 23.9 / 8.5 / 14.1; 4: 23.7 / 7.0 / 15.0; 8: 22.6 / 13.3;
//            12: 13.6 / 10.4; 16: 9.1 / 9.9
//    From 8 tokens the kernel is bound by vpdpbusd (~200 GMAC/s a thread here), as the GEMM is,
//    and at 16 the GEMM's register tiles catch up. (Before it, the zmm GEMM ran from 8 tokens.)
//  - Q5_K (Q5_K_M files): Q4_K's kernels with a fifth bit (x86/quant_avx2.cpp, gemm_k_avx2.cpp,
//    arm/quant_neon.cpp), the GEMM from 8 tokens as Q4_K's. TinyLlama Q5_K_M from llama-quantize, 2
//    threads, AMD EPYC (docs/benchmarks.md): pp512 with the row kernel 50 tok/s, with the GEMM 92.
//    Interleaved as Q4_K (kernels/rows_x8.h), with interleaved Q4_K's kernels and the fifth bit
//    (x86/q4_kx8_avx2.cpp, gemm_k_avx2.cpp, arm/q4_kx8_neon.cpp): bench_kernels 32768 x 4096 on the
//    Zen 4, GB/s of weights, plain / interleaved rows: 1 token 21-22 / 26-28 (2 threads 31-37 /
//    42-53); 1 thread, tokens 2: 16.6 / 15.9, 4: 8.7 / 10.1, 5: 7.9 / 7.4, 6: 6.7 / 6.0, 8: 5.2 /
//    4.6 against the interleaved GEMM's 5.2-5.5: so the GEMM from 8 tokens, as on plain rows. With
//    AVX-512, interleaved Q4_K's few-token kernel with the fifth bit (x86/gemv_q4_k_avx512.cpp)
//    from 1 token (Zen 4: into L2, from 2) up to 15, then the zmm GEMM (x86/gemm_avx512.cpp). The
//    same bench, 2 threads, few-token kernel into L2 / AVX2 rows or GEMM: 1 token 28 / 33-37 (so
//    one token stays on the AVX2 rows on Zen 4), 2: 30-31 / 23, 4: 28-31 / 20, 8: 13-14 / 10-11; 1
//    thread, few-token kernel / zmm GEMM: 8 tokens 9.4-10.8 / 7.0-7.3, 12: 6.7-7.5 / 5.8-5.9, 16:
//    5.3-5.8 / 5.6-5.8, 24: 3.7-3.9 / 4.3-4.4; 64 tokens from cache, 1 thread, zmm / AVX2 GEMM 170
//    / 125-128 GMAC/s. Intel runs the few-token kernel into L1 from 1 token, as Q4_K's (measured
//    there for Q4_K only).
//  - Q4_1, Q5_0, Q5_1, IQ4_NL (GGUF files: the 32-element types llama.cpp's K-quant mixes use where a
//    row is no multiple of 256, e.g. Qwen2.5-0.5B's): the row kernels of Q4_0 and Q8_0 (one
//    template). Q5_0, Q4_1 and Q5_1 x one token: Q4_0's 4-row gemv (x86/gemv_avx2.cpp) with the fifth
//    bit / the offsets / both, from 2 tokens the row kernel: bench_kernels (8192 x 8192, 3 runs, GB/s
//    of weights, gemv / rows) Q5_0 1 token, 1 thread 7.4-10.6 / 7.0-8.3, 2 threads 14.4-16.3 /
//    9.7-14.0; 2 tokens, 1 thread 3.9-5.4 / 6.1-6.9; Q4_1 1 token, 1 thread 9.5-13.4 / 7.6-10.2, 2
//    threads 17.7-25.7 / 14.9-16.4; 2 tokens, 2 threads 8.6-10.3 / 10.5-11.0; Q5_1 1 token, 1 thread
//    11.0 / 6.7, 2 threads 11.8 / 12.1 (this host's bandwidth that day: 15 GB/s); 2 tokens, 1 thread
//    4.2 / 6.3 (one run). IQ4_NL x one token: the same gemv with its grid, from 2 tokens the row
//    kernel: bench_kernels (8192 x 8192, 3 runs, GB/s of weights, gemv / rows; AMD EPYC Zen 4) 1
//    thread 14.6, 14.7, 14.2 / 14.0, 13.9, 13.3; 2 threads 31.9, 30.3, 29.5 / 30.0, 29.2, 28.3.
//    Q5_0 and IQ4_NL blocks are Q8_0 blocks in fewer bits, so Q8_0's AVX2 GEMM
//    packs them (x86/gemm_avx2.cpp): Q5_0 from 8 tokens, IQ4_NL from 4, the crossovers measured with
//    tools/bench_kernels (4096 x 4096, 1 thread, AMD EPYC Zen 3; GB/s of weights, rows / GEMM): Q5_0
//    4 tokens 4.9 / 4.1, 8: 2.8 / 3.0, 16: 1.3 / 1.7, 64: 27.6 / 50.0 GMAC/s; IQ4_NL 4 tokens 3.4 /
//    4.0, 64: 27.9 / 49.7 GMAC/s. Q4_1 and Q5_1 (d * q + m) are packed as Q4_0 (unsigned quants) with
//    the blocks' offsets beside their scales: Q4_1 from 4 tokens, Q5_1 from 8 (bench_kernels as
//    above, 2-3 runs, rows / GEMM: Q4_1 3 tokens 4.4-5.4 / 4.3-4.5, 4: 3.5-4.2 / 4.3-4.5, 8: 1.8 /
//    3.5, 64: 24 / 56-75 GMAC/s; Q5_1 4 tokens 3.4-4.5 / 3.6-3.7, 6: 2.7-3.2 / 2.7-2.8, 8: 2.4 / 2.8,
//    64: 22 / 50-65 GMAC/s).
//  - Q3_K (Q3_K_M files): Q6_K's row kernels (one template: 16 groups of 16 with signed scales,
//    the offset through the bsums), and Q6_K's AVX2 GEMM from 16 tokens, as Q6_K's (its panel
//    takes q - 4 as it takes q - 32). bench_kernels (4096 x 4096, 1 thread, GB/s of weights,
//    rows / GEMM): 8 tokens 1.97 / 1.84, 16: 0.67 / 1.51, 64: 22.8 / 74.3 GMAC/s. IQ4_XS
//    (sub-blocks of 32, two groups each, its grid values signed): that template's row kernels;
//    Q6_K's GEMM panel would overflow its int16 sums with values up to 127, but each sub-block is
//    an IQ4_NL block with the scale d * (ls - 32), so Q8_0's AVX2 GEMM packs it (x Q8_K
//    activations, whose sub-blocks of 32 share one scale), from 8 tokens: bench_kernels (4096 x
//    4096, 1 thread, 3 runs, GB/s of weights, rows / GEMM) 4 tokens 4.1-4.8 / 2.6-3.6, 8: 2.0-2.4
//    / 1.8-2.4, 16: 1.2 / 1.3-1.5, 64: 37 / 52 GMAC/s.
//  - Q2_K (Q2_K files, which llama.cpp mixes with Q3_K, Q4_K and Q6_K): that template's row kernels,
//    with a min per group (dmin times the mins' dot with the bsums, as Q4_K's), and from 8 tokens
//    Q6_K's AVX2 GEMM, whose panel takes the quants 0..3 and scales 0..15 and keeps the mins
//    beside them for that term. bench_kernels (4096 x 4096, 1 thread, AMD EPYC Zen 4, 3 runs,
//    GB/s of weights, rows / GEMM; the GEMM's time steps with each tile of 4 tokens): with VNNI
//    7 tokens 2.81 / 2.69, 8: 2.51 / 2.69, 9: 2.12 / 1.96, 10: 1.98 / 1.96, 12: 1.72 / 1.95, 16:
//    1.26 / 1.53, 64: 61 / 84 GMAC/s; built for plain AVX2 (-march=haswell), 6 tokens 3.20 /
//    3.0, 8: 2.28 / 3.12, 12: 1.57 / 2.31, 64: 56 / 104 GMAC/s.
//  - Q3_K and Q2_K with AVX-512: Q6_K's zmm GEMM (x86/gemm_avx512.cpp: the same panel on 16 rows,
//    Q2_K's mins beside it) from 6 tokens, listed again at the AVX2 GEMMs' 16 and 8 to take over
//    there. bench_kernels (4096 x 4096, 1 thread, AMD EPYC Zen 4, 3 runs, GB/s of weights, AVX2
//    rows / AVX2 GEMM / zmm GEMM; the zmm GEMM's time is that of its 8-token tile up to 8 tokens):
//      q3_K 5 tokens 5.35-5.37 / 3.50-3.52 / 4.36-4.47; 6: 3.98-4.02 / 3.50-3.52 / 4.35-4.46; 8:
//           3.11-3.21 / 3.33-3.49 / 4.18-4.44; 16: 1.59-1.61 / 2.00-2.14 / 2.86-2.99; 64: 60 /
//           92-93 / 150-153 GMAC/s
//      q2_K 5 tokens 4.22-4.25 / 2.67-2.69 / 3.84-3.85; 6: 3.54-3.55 / 2.67-2.69 / 3.83-3.84; 8:
//           2.51-2.52 / 2.67-2.68 / 3.78-3.83; 16: 1.26 / 1.50-1.54 / 2.37-2.38; 64: 55-61 /
//           79-83 / 144 GMAC/s
//    16384 x 4096 on 2 threads (2 runs, rows / zmm GEMM): q3_K 5 tokens 10.4, 10.6 / 8.2, 8.5; 6:
//    7.7, 7.9 / 7.9, 8.2; q2_K 5: 6.8, 8.3 / 7.5, 7.5; 6: 6.9, 6.9 / 7.5, 7.6. The panel's scales
//    are now unpacked in vector lanes (they were stored one at a time), which Q6_K's zmm GEMM
//    gains too (same bench, 3 alternated runs, before / after: 8 tokens 6.4-7.0 / 7.8-8.0, 16:
//    4.3-5.0 / 5.2-5.4, 64: 145-147 / 150-151 GMAC/s). TinyLlama run --bench pp512, 2 threads,
//    5 alternated runs, medians, tok/s, AVX2 GEMM / zmm GEMM: Q3_K_M 188.9 / 247.5, Q2_K 159.1 /
//    242.7.
//  - Plain Q6_K (the output matrix of quantized models): with AVX-512, the few-token kernel
//    (x86/gemv_q6_k_avx512.cpp: each super-block decoded once per 8 tokens) from 1 token up to
//    15, the zmm GEMM from 16. Measured with tools/bench_kernels (32000 x 2048, TinyLlama's output,
//    all rows, 1 thread, CPU time: GB/s of weights; the shared 2-vCPU Xeon at load 2.2-2.5, best
//    of 5; a run under heavier load from others gave about half of every figure), few-token
//    kernel / the AVX2 row kernel it replaced:
//      1 token 26.3 / 21.5; 2: 21.4 / 16.2; 4: 16.4 / 9.6; 8: 10.2 / 4.2; 12: 6.4 / 2.9;
//      16: 4.0 / 2.1 (zmm GEMM 3.9, AVX2 GEMM 3.6)
//    8 tokens cost 2.6x one token (the row kernel 5x): from 2 tokens it is bound by compute, not
//    memory (8 tokens: ~100 GMAC/s, vpdpbusd plus per token and block a convert, multiply and fma,
//    and the decode and lane transpose of each block on the shuffle port). In an 8-token pass of TinyLlama Q4_0 (run
//    --perplexity -c 8, 2 threads, perf) the output matmul went from 19% of the samples to 9%.
//  - Interleaved Q4_K: the GEMMs from 32 tokens. With AVX-512, below that the few-token kernel
//    (x86/gemv_q4_k_avx512.cpp: gemv_avx512.cpp's design, each record read once for up to 8
//    tokens) from 1 token. Measured with tools/bench_kernels (32768 x 2048, all rows, 1 thread,
//    CPU time: GB/s of weights; the shared 2-vCPU Xeon at load 1.3-3, best of 3 runs), few-token
//    kernel / the AVX2 rows it replaced / zmm GEMM:
//      q4_K: 1 token 27.1 / 25.8 / 11.1; 2: 25.2 / 19.7 / 10.7; 4: 19.4 / 12.1 / 10.8;
//            8: 12.2 / 6.1 / 10.5; 16: 6.1 / 3.0 / 6.4; 24: 4.2 / 2.0 / 4.5; 31: 3.3 / 1.4 / 3.55
//    From memory (65536 x 5632, 207 MB; one thread reads 11.8 GB/s), two runs: 1 token 13.7, 12.7
//    / 12.9, 12.5; 2 tokens 13.5, 11.9 / 12.0, 12.5; 8 tokens 9.9, 8.9 / 5.6, 5.6. From 8 tokens
//    it is compute-bound (~190 GMAC/s), and from 16 the zmm GEMM is 4-10% faster (it
//    unpacks a chunk's nibbles once for all its tiles; here every block of 8 tokens does, and
//    scales each sub-block per token): a threshold of 16 for it would take that; the GEMMs stay
//    from 32 for now. Without AVX-512, below 32 the passes of up to 4 tokens over
//    L1-resident chunks of x86/q4_kx8_avx2.cpp are faster: measured on one thread (512 x 4096, a
//    shared 2-core Xeon, AVX2 code; medians of interleaved runs, noise ~10%), passes / GEMM = 1.56
//    at 8 tokens, 1.18 at 16, 0.97 at 32, 0.95 at 64. (8 is the crossover for plain Q4_K, whose
//    few-token kernel is slower than these passes.)
//  - AMX (x86/gemm_amx.cpp) on interleaved Q4_0/Q8_0 from 32 tokens. A tile is 16 tokens (fewer
//    are padded); measured against the zmm GEMM on one thread (1024 x 2048, a shared, loaded
//    2-vCPU Xeon; best of 40 alternated calls, noise ~10%): AMX / zmm = 0.6 at 8 tokens, 0.8-1.07
//    at 16, 0.93 at 24, 1.06-1.15 at 32, 1.1-1.2 at 64 and 128 (docs/benchmarks.md, "AMX prompt GEMM").
//    Interleaved Q4_K from 32 too: AMX / zmm 0.95-1.16 at 32 tokens, 1.4-2.4 at 64 (bench_kernels,
//    three runs; docs/benchmarks.md, "Q4_K on AMX tiles").
//  - AMD Zen 4 (family 0x19 with AVX-512; Isa::avx512_zen4 / avx512_not_zen4). One token: the
//    AVX2 rows of interleaved Q4_0, Q8_0 and Q4_K, not the AVX-512 few-token kernels. From 2 tokens
//    (Q8_0: 3): the few-token kernels prefetching into L2 (prefetcht1), not L1 (kernels/prefetch.h);
//    plain Q6_K's too, whose L2 kernel also reads wide rows in column chunks that keep every
//    token's activations in L1 (x86/gemv_q6_k_avx512.cpp).
//    Prefetching into L1, as on Intel, these kernels stream from memory slower than the AVX2 rows
//    on Zen 4, though from cache they are faster (5632 x 2048, 1 thread, Q4_0 1 token: 53.8 GB/s
//    against 42.3). bench_kernels 32768 x 4096 (75 MB), 2 threads, GB/s of weights, two runs,
//    AVX2 rows / few-token kernel into L1 / into L2:
//      Q4_0 1 token 67, 50 / 38, 31 / 77, 80; 2: 49, 44 / 42, 41 / 73, 72; 4: 28, 27 / 39, 32 /
//      47, 48; 8: 14, 14 / 25, 25 / 25, 25
//      Q8_0 1: 38, 40 / 33, 32 / 39, 53; 2: 38, 37 / 32, 31 / 39, 52; 3: 37, 35 / 31, 30 / 38,
//      63; 8: 16, 16 / 31, 32 / 40, 43
//      Q4_K 1: 49, 49 / 27, 26 / 37, 43; 2: 45, 44 / 25, 26 / 42, 44; 4: 30, 28 / 23, 23 / 39,
//      40; 8: 15, 15 / 18, 19 / 23, 23
//      Q6_K (L1 / L2) 1: 44, 41 / 38, 40; 2: 38, 36 / 38, 38; 4: 26, 25 / 32, 32; and 32768 x
//      5632 (the L2 kernel in column chunks): 4: 18.8, 19.1 / 23.2, 23.7; 6: 14.8, 14.7 / 20.4,
//      19.5; 8: 11.8, 11.8 / 15.4, 15.4; 12: 8.2, 7.9 / 8.9, 8.9
//    End to end not every kernel figure carries over, so the rows follow run --bench (TinyLlama
//    shape, tg64, 2 threads, 3 alternated runs, medians, tok/s in all; docs/benchmarks.md,
//    "Prefetching into L2 on Zen 4"): one token, AVX2 rows / into L2, q4_0 68.6 / 64.5, q4_k_m
//    59.7 / 51.5 (5 runs); q8_0 at 2 sequences 61.7 / 58.1. Before / after the L2 rows: q4_0 2
//    sequences 97.2 -> 127.9, 4: 161.8 -> 195.1, 8: 248.2 -> 263.2; q8_0 3: 101.6 -> 112.1, 4:
//    107.4 -> 116.3, 8: 197.5 -> 240.7; q4_k_m 2: 109.1 -> 115.1, 4: 141.9 -> 171.6, 8: 170.3 ->
//    206.6. (Before them, the AVX2 rows ran up to 3 tokens there (Q4_K: 4) and the kernels into
//    L1 from 4 (5); taking one token off the kernels into L1 had given q4_0 49.8 -> 75.2 tok/s,
//    q8_0 32.0 -> 44.2, q4_k_m 39.6 -> 70.4, Llama-2-7B q4_0 7.35 -> 12.60.) Intel keeps the
//    kernels into L1 from 1 token: they were measured there, the L2 ones were not.
//  - AMD Zen 5 (family 0x1A; Isa::avx512_not_zen is off there): one token on the AVX2 rows as on
//    Zen 4, from 2 tokens the kernels into L1 as on Intel. Its AVX-512 is 512 bits wide (vnni_ports:
//    64 vpdpbusd zmm in 11.3 ns, 362 GMAC/s a thread, Zen 4 201). run --bench, 2 threads, tok/s in
//    all, alternated, medians (docs/benchmarks.md, "Zen 5"): TinyLlama shape one token, kernels
//    into L1 / AVX2 rows, q4_0 63.6 / 72.6, q4_k_m 59.3 / 71.7 (5 runs), Llama-2-7B q4_0 15.0 /
//    15.8 (5); 8 sequences q4_0, into L1 / into L2 444.1 / 349.0 (5 runs). Its one-token Q4_0 rows
//    prefetch 8 KB ahead, not 4 (Isa::avx2_zen5; a thread there reads 36-41 GB/s, so more bytes
//    are in flight): this row alone, Llama-2-7B 16.00 -> 16.88, TinyLlama 98.0 -> 101.5 tok/s (5
//    runs). With 8 KB for every kernel, 16 KB gave 17.1 against 8 KB's 17.5 on the 7B, and 8 KB
//    lost 2% at 8 sequences and 3% on q4_k_m's one token.
//  - NEON i8mm (SMMLA) GEMMs from 4 tokens: a guess, not measured (there is no ARM CPU here).
#include "kernels/table.h"

#include "kernels/arm/arm.h"
#include "kernels/isa.h"
#include "kernels/ref/ref.h"
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX2)
#define AVX2(f) f
#else
#define AVX2(f) nullptr
#endif
// AVX2 kernels that a VNNI build leaves out: there the GEMM they replace multiplies with vpdpbusd.
#if defined(HEARTH_ISA_AVX2) && !defined(HEARTH_ISA_AVX_VNNI)
#define AVX2_NO_VNNI(f) f
#else
#define AVX2_NO_VNNI(f) nullptr
#endif
#if defined(HEARTH_ISA_AVX512)
#define AVX512(f) f
#else
#define AVX512(f) nullptr
#endif
#if defined(HEARTH_ISA_AMX)
#define AMX(f) f
#else
#define AMX(f) nullptr
#endif
#if defined(HEARTH_ISA_NEON)
#define NEON(f) f
#else
#define NEON(f) nullptr
#endif
#if defined(HEARTH_ISA_I8MM)
#define I8MM(f) f
#else
#define I8MM(f) nullptr
#endif
#include "base/platform.h"

#include <cstdlib>
#include <cstring>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace hearth {

namespace {

constexpr KernelOp M = KernelOp::matmul, Q = KernelOp::quantize;
constexpr Layout R = Layout::rows, X8 = Layout::rows_x8;

const KernelRow kRows[] = {
    // Activation quantizers.
    {Q, TYPE_Q8_0, R, Isa::scalar, 1, nullptr, quantize_row_q8_0_scalar},
    {Q, TYPE_Q8_0, R, Isa::avx2, 1, nullptr, AVX2(quantize_row_q8_0_avx2)},
    {Q, TYPE_Q8_0, R, Isa::avx512, 1, nullptr, AVX512(quantize_row_q8_0_avx512)},
    {Q, TYPE_Q8_0, R, Isa::neon, 1, nullptr, NEON(quantize_row_q8_0_neon)},
    {Q, TYPE_Q8_K, R, Isa::scalar, 1, nullptr, quantize_row_q8_k_scalar},
    {Q, TYPE_Q8_K, R, Isa::avx2, 1, nullptr, AVX2(quantize_row_q8_k_avx2)},
    {Q, TYPE_Q8_K, R, Isa::neon, 1, nullptr, NEON(quantize_row_q8_k_neon)},
    // Float weights x fp32 activations.
    {M, TYPE_F32, R, Isa::scalar, 1, matmul_f32_rows_scalar, nullptr},
    {M, TYPE_F32, R, Isa::avx2, 1, AVX2(matmul_f32_rows_avx2), nullptr},
    {M, TYPE_F32, R, Isa::avx2, 24, AVX2(matmul_f32_tiles_avx2), nullptr},
    {M, TYPE_F16, R, Isa::scalar, 1, matmul_f16_rows_scalar, nullptr},
    {M, TYPE_F16, R, Isa::avx2, 1, AVX2(matmul_f16_rows_avx2), nullptr},
    {M, TYPE_F16, R, Isa::avx2, 24, AVX2(matmul_f16_tiles_avx2), nullptr},
    {M, TYPE_BF16, R, Isa::scalar, 1, matmul_bf16_rows_scalar, nullptr},
    {M, TYPE_BF16, R, Isa::avx2, 1, AVX2(matmul_bf16_rows_avx2), nullptr},
    {M, TYPE_BF16, R, Isa::avx2, 24, AVX2(matmul_bf16_tiles_avx2), nullptr},
    // Plain rows.
    {M, TYPE_Q4_0, R, Isa::scalar, 1, matmul_q4_0_rows_scalar, nullptr},
    {M, TYPE_Q4_0, R, Isa::neon, 1, NEON(matmul_q4_0_rows_neon), nullptr},
    {M, TYPE_Q4_0, R, Isa::avx2, 1, AVX2(matmul_q4_0_gemv_avx2), nullptr},
    {M, TYPE_Q4_0, R, Isa::avx2, 2, AVX2(matmul_q4_0_rows_avx2), nullptr},
    {M, TYPE_Q4_0, R, Isa::avx2, 4, AVX2(matmul_q4_0_gemm_avx2), nullptr},
    {M, TYPE_Q8_0, R, Isa::scalar, 1, matmul_q8_0_rows_scalar, nullptr},
    {M, TYPE_Q8_0, R, Isa::neon, 1, NEON(matmul_q8_0_rows_neon), nullptr},
    {M, TYPE_Q8_0, R, Isa::avx2, 1, AVX2(matmul_q8_0_rows_avx2), nullptr},
    {M, TYPE_Q8_0, R, Isa::avx2, 4, AVX2(matmul_q8_0_gemm_avx2), nullptr},
    {M, TYPE_Q4_1, R, Isa::scalar, 1, matmul_q4_1_rows_scalar, nullptr},
    {M, TYPE_Q4_1, R, Isa::neon, 1, NEON(matmul_q4_1_rows_neon), nullptr},
    {M, TYPE_Q4_1, R, Isa::avx2, 1, AVX2(matmul_q4_1_gemv_avx2), nullptr},
    {M, TYPE_Q4_1, R, Isa::avx2, 2, AVX2(matmul_q4_1_rows_avx2), nullptr},
    {M, TYPE_Q4_1, R, Isa::avx2, 4, AVX2(matmul_q4_1_gemm_avx2), nullptr},
    {M, TYPE_Q5_0, R, Isa::scalar, 1, matmul_q5_0_rows_scalar, nullptr},
    {M, TYPE_Q5_0, R, Isa::neon, 1, NEON(matmul_q5_0_rows_neon), nullptr},
    {M, TYPE_Q5_0, R, Isa::avx2, 1, AVX2(matmul_q5_0_gemv_avx2), nullptr},
    {M, TYPE_Q5_0, R, Isa::avx2, 2, AVX2(matmul_q5_0_rows_avx2), nullptr},
    {M, TYPE_Q5_0, R, Isa::avx2, 8, AVX2(matmul_q5_0_gemm_avx2), nullptr},
    {M, TYPE_Q5_1, R, Isa::scalar, 1, matmul_q5_1_rows_scalar, nullptr},
    {M, TYPE_Q5_1, R, Isa::neon, 1, NEON(matmul_q5_1_rows_neon), nullptr},
    {M, TYPE_Q5_1, R, Isa::avx2, 1, AVX2(matmul_q5_1_gemv_avx2), nullptr},
    {M, TYPE_Q5_1, R, Isa::avx2, 2, AVX2(matmul_q5_1_rows_avx2), nullptr},
    {M, TYPE_Q5_1, R, Isa::avx2, 8, AVX2(matmul_q5_1_gemm_avx2), nullptr},
    {M, TYPE_IQ4_NL, R, Isa::scalar, 1, matmul_iq4_nl_rows_scalar, nullptr},
    {M, TYPE_IQ4_NL, R, Isa::neon, 1, NEON(matmul_iq4_nl_rows_neon), nullptr},
    {M, TYPE_IQ4_NL, R, Isa::avx2, 1, AVX2(matmul_iq4_nl_gemv_avx2), nullptr},
    {M, TYPE_IQ4_NL, R, Isa::avx2, 2, AVX2(matmul_iq4_nl_rows_avx2), nullptr},
    {M, TYPE_IQ4_NL, R, Isa::avx2, 4, AVX2(matmul_iq4_nl_gemm_avx2), nullptr},
    {M, TYPE_Q2_K, R, Isa::scalar, 1, matmul_q2_k_rows_scalar, nullptr},
    {M, TYPE_Q2_K, R, Isa::neon, 1, NEON(matmul_q2_k_rows_neon), nullptr},
    {M, TYPE_Q2_K, R, Isa::avx2, 1, AVX2(matmul_q2_k_rows_avx2), nullptr},
    {M, TYPE_Q2_K, R, Isa::avx2, 8, AVX2(matmul_q2_k_gemm_avx2), nullptr},
    {M, TYPE_Q2_K, R, Isa::avx512, 6, AVX512(matmul_q2_k_gemm_avx512), nullptr},
    {M, TYPE_Q2_K, R, Isa::avx512, 8, AVX512(matmul_q2_k_gemm_avx512), nullptr},  // over the AVX2 GEMM's 8
    {M, TYPE_Q3_K, R, Isa::scalar, 1, matmul_q3_k_rows_scalar, nullptr},
    {M, TYPE_Q3_K, R, Isa::neon, 1, NEON(matmul_q3_k_rows_neon), nullptr},
    {M, TYPE_Q3_K, R, Isa::avx2, 1, AVX2(matmul_q3_k_rows_avx2), nullptr},
    {M, TYPE_Q3_K, R, Isa::avx2, 16, AVX2(matmul_q3_k_gemm_avx2), nullptr},
    {M, TYPE_Q3_K, R, Isa::avx512, 6, AVX512(matmul_q3_k_gemm_avx512), nullptr},
    {M, TYPE_Q3_K, R, Isa::avx512, 16, AVX512(matmul_q3_k_gemm_avx512), nullptr},  // over the AVX2 GEMM's 16
    {M, TYPE_Q4_K, R, Isa::scalar, 1, matmul_q4_k_rows_scalar, nullptr},
    {M, TYPE_Q4_K, R, Isa::neon, 1, NEON(matmul_q4_k_rows_neon), nullptr},
    {M, TYPE_Q4_K, R, Isa::avx2, 1, AVX2(matmul_q4_k_rows_avx2), nullptr},
    {M, TYPE_Q4_K, R, Isa::avx2, 8, AVX2(matmul_q4_k_gemm_avx2), nullptr},
    {M, TYPE_IQ4_XS, R, Isa::scalar, 1, matmul_iq4_xs_rows_scalar, nullptr},
    {M, TYPE_IQ4_XS, R, Isa::neon, 1, NEON(matmul_iq4_xs_rows_neon), nullptr},
    {M, TYPE_IQ4_XS, R, Isa::avx2, 1, AVX2(matmul_iq4_xs_rows_avx2), nullptr},
    {M, TYPE_IQ4_XS, R, Isa::avx2, 8, AVX2(matmul_iq4_xs_gemm_avx2), nullptr},
    {M, TYPE_Q5_K, R, Isa::scalar, 1, matmul_q5_k_rows_scalar, nullptr},
    {M, TYPE_Q5_K, R, Isa::neon, 1, NEON(matmul_q5_k_rows_neon), nullptr},
    {M, TYPE_Q5_K, R, Isa::avx2, 1, AVX2(matmul_q5_k_rows_avx2), nullptr},
    {M, TYPE_Q5_K, R, Isa::avx2, 8, AVX2(matmul_q5_k_gemm_avx2), nullptr},
    {M, TYPE_Q6_K, R, Isa::scalar, 1, matmul_q6_k_rows_scalar, nullptr},
    {M, TYPE_Q6_K, R, Isa::neon, 1, NEON(matmul_q6_k_rows_neon), nullptr},
    {M, TYPE_Q6_K, R, Isa::avx2, 1, AVX2(matmul_q6_k_rows_avx2), nullptr},
    {M, TYPE_Q6_K, R, Isa::avx512, 1, AVX512(matmul_q6_k_few_avx512), nullptr},
    {M, TYPE_Q6_K, R, Isa::avx512_zen4, 2, AVX512(matmul_q6_k_few_l2_avx512), nullptr},
    {M, TYPE_Q6_K, R, Isa::avx2, 16, AVX2(matmul_q6_k_gemm_avx2), nullptr},
    {M, TYPE_Q6_K, R, Isa::avx512, 16, AVX512(matmul_q6_k_gemm_avx512), nullptr},
    // Rows interleaved by 8 (kernels/rows_x8.h).
    {M, TYPE_Q4_0, X8, Isa::scalar, 1, matmul_q4_0x8_rows_scalar, nullptr},
    {M, TYPE_Q4_0, X8, Isa::neon, 1, NEON(matmul_q4_0x8_rows_neon), nullptr},
    {M, TYPE_Q4_0, X8, Isa::i8mm, 4, I8MM(matmul_q4_0x8_gemm_i8mm), nullptr},
    {M, TYPE_Q4_0, X8, Isa::avx2, 1, AVX2(matmul_q4_0x8_rows_avx2), nullptr},
    {M, TYPE_Q4_0, X8, Isa::avx2_zen5, 1, AVX2(matmul_q4_0x8_rows_prefetch8k_avx2), nullptr},
    {M, TYPE_Q4_0, X8, Isa::avx2, 4, AVX2(matmul_q4_0x8_gemm_avx2), nullptr},
    {M, TYPE_Q4_0, X8, Isa::avx2, 4, AVX2_NO_VNNI(matmul_q4_0x8_few_avx2), nullptr},  // over the GEMM, where built
    {M, TYPE_Q4_0, X8, Isa::avx512_not_zen, 1, AVX512(matmul_q4_0x8_few_avx512), nullptr},
    {M, TYPE_Q4_0, X8, Isa::avx512_not_zen4, 2, AVX512(matmul_q4_0x8_few_avx512), nullptr},
    {M, TYPE_Q4_0, X8, Isa::avx512_zen4, 2, AVX512(matmul_q4_0x8_few_l2_avx512), nullptr},
    {M, TYPE_Q4_0, X8, Isa::avx512_not_zen4, 4, AVX512(matmul_q4_0x8_few_avx512), nullptr},  // over the AVX2 GEMM's 4
    {M, TYPE_Q4_0, X8, Isa::avx512_zen4, 4, AVX512(matmul_q4_0x8_few_l2_avx512), nullptr},
    {M, TYPE_Q4_0, X8, Isa::avx512, 16, AVX512(matmul_q4_0x8_gemm_avx512), nullptr},
    {M, TYPE_Q4_0, X8, Isa::amx, 32, AMX(matmul_q4_0x8_gemm_amx), nullptr},
    {M, TYPE_Q8_0, X8, Isa::scalar, 1, matmul_q8_0x8_rows_scalar, nullptr},
    {M, TYPE_Q8_0, X8, Isa::neon, 1, NEON(matmul_q8_0x8_rows_neon), nullptr},
    {M, TYPE_Q8_0, X8, Isa::i8mm, 4, I8MM(matmul_q8_0x8_gemm_i8mm), nullptr},
    {M, TYPE_Q8_0, X8, Isa::avx2, 1, AVX2(matmul_q8_0x8_rows_avx2), nullptr},
    {M, TYPE_Q8_0, X8, Isa::avx2, 4, AVX2(matmul_q8_0x8_gemm_avx2), nullptr},
    {M, TYPE_Q8_0, X8, Isa::avx512_not_zen, 1, AVX512(matmul_q8_0x8_few_avx512), nullptr},
    {M, TYPE_Q8_0, X8, Isa::avx512_not_zen4, 2, AVX512(matmul_q8_0x8_few_avx512), nullptr},
    {M, TYPE_Q8_0, X8, Isa::avx512_zen4, 3, AVX512(matmul_q8_0x8_few_l2_avx512), nullptr},
    {M, TYPE_Q8_0, X8, Isa::avx512_not_zen4, 4, AVX512(matmul_q8_0x8_few_avx512), nullptr},  // over the AVX2 GEMM's 4
    {M, TYPE_Q8_0, X8, Isa::avx512_zen4, 4, AVX512(matmul_q8_0x8_few_l2_avx512), nullptr},
    {M, TYPE_Q8_0, X8, Isa::avx512, 16, AVX512(matmul_q8_0x8_gemm_avx512), nullptr},
    {M, TYPE_Q8_0, X8, Isa::amx, 32, AMX(matmul_q8_0x8_gemm_amx), nullptr},
    {M, TYPE_Q4_K, X8, Isa::scalar, 1, matmul_q4_kx8_rows_scalar, nullptr},
    {M, TYPE_Q4_K, X8, Isa::neon, 1, NEON(matmul_q4_kx8_rows_neon), nullptr},
    {M, TYPE_Q4_K, X8, Isa::i8mm, 4, I8MM(matmul_q4_kx8_gemm_i8mm), nullptr},
    {M, TYPE_Q4_K, X8, Isa::avx2, 1, AVX2(matmul_q4_kx8_rows_avx2), nullptr},
    {M, TYPE_Q4_K, X8, Isa::avx2, 32, AVX2(matmul_q4_kx8_gemm_avx2), nullptr},
    {M, TYPE_Q4_K, X8, Isa::avx512_not_zen, 1, AVX512(matmul_q4_kx8_few_avx512), nullptr},
    {M, TYPE_Q4_K, X8, Isa::avx512_not_zen4, 2, AVX512(matmul_q4_kx8_few_avx512), nullptr},
    {M, TYPE_Q4_K, X8, Isa::avx512_zen4, 2, AVX512(matmul_q4_kx8_few_l2_avx512), nullptr},
    {M, TYPE_Q4_K, X8, Isa::avx512, 32, AVX512(matmul_q4_kx8_gemm_avx512), nullptr},
    {M, TYPE_Q4_K, X8, Isa::amx, 32, AMX(matmul_q4_kx8_gemm_amx), nullptr},
    {M, TYPE_Q5_K, X8, Isa::scalar, 1, matmul_q5_kx8_rows_scalar, nullptr},
    {M, TYPE_Q5_K, X8, Isa::neon, 1, NEON(matmul_q5_kx8_rows_neon), nullptr},
    {M, TYPE_Q5_K, X8, Isa::avx2, 1, AVX2(matmul_q5_kx8_rows_avx2), nullptr},
    {M, TYPE_Q5_K, X8, Isa::avx2, 8, AVX2(matmul_q5_kx8_gemm_avx2), nullptr},
    {M, TYPE_Q5_K, X8, Isa::avx512_not_zen, 1, AVX512(matmul_q5_kx8_few_avx512), nullptr},
    {M, TYPE_Q5_K, X8, Isa::avx512_not_zen4, 2, AVX512(matmul_q5_kx8_few_avx512), nullptr},
    {M, TYPE_Q5_K, X8, Isa::avx512_zen4, 2, AVX512(matmul_q5_kx8_few_l2_avx512), nullptr},
    {M, TYPE_Q5_K, X8, Isa::avx512_not_zen4, 8, AVX512(matmul_q5_kx8_few_avx512), nullptr},  // over the AVX2 GEMM's 8
    {M, TYPE_Q5_K, X8, Isa::avx512_zen4, 8, AVX512(matmul_q5_kx8_few_l2_avx512), nullptr},
    {M, TYPE_Q5_K, X8, Isa::avx512, 16, AVX512(matmul_q5_kx8_gemm_avx512), nullptr},
};
constexpr int kNumRows = int(sizeof kRows / sizeof kRows[0]);

// The running CPU's instruction sets, asked once. A binary built for an ISA runs only on CPUs
// that have it, so this matters where a row's ISA is built but the CPU lacks a part of it.
bool cpu_has(Isa isa) {
    switch (isa) {
        case Isa::scalar: return true;
#if defined(__x86_64__) || defined(__i386__)
        case Isa::avx2: {
            static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
            return ok;
        }
        case Isa::avx512: {
            static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
            return ok;
        }
        case Isa::avx2_zen5:
        case Isa::avx512_not_zen:
        case Isa::avx512_not_zen4:
        case Isa::avx512_zen4: {
            // Zen 4 is AMD's family 0x19 with AVX-512 (Zen 3, the same family, has none), Zen 5
            // family 0x1A. CPUID's family, as the kernel's /proc/cpuinfo reads it (GCC 12's
            // __builtin_cpu_is knows no "amdfam1ah").
            static const int amd_family = [] {
                unsigned a = 0, b = 0, c = 0, d = 0;
                if (!__builtin_cpu_is("amd") || !__get_cpuid(1, &a, &b, &c, &d)) return 0;
                const unsigned base = (a >> 8) & 0xf;
                return int(base == 0xf ? base + ((a >> 20) & 0xff) : base);
            }();
            if (isa == Isa::avx2_zen5) return cpu_has(Isa::avx2) && amd_family == 0x1a;
            if (!cpu_has(Isa::avx512)) return false;
            if (isa == Isa::avx512_zen4) return amd_family == 0x19;
            if (isa == Isa::avx512_not_zen4) return amd_family != 0x19;
            return amd_family != 0x19 && amd_family != 0x1a;
        }
        case Isa::amx: {
            // AMX-TILE and AMX-INT8 (CPUID leaf 7: EDX bits 24, 25), the AVX-512 of the float side
            // and VBMI (kernels/isa.h), and the OS's permission to use the tiles, asked once.
            // HEARTH_NO_AMX=1 turns the rows off (to compare with the AVX-512 rows on the same machine).
            static const bool ok = [] {
                unsigned a = 0, b = 0, c = 0, d = 0;
                if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25))) return false;
                const char* off = std::getenv("HEARTH_NO_AMX");
                if (off && *off && std::strcmp(off, "0") != 0) return false;
                return cpu_has(Isa::avx512) && __builtin_cpu_supports("avx512vbmi") && x86_request_amx_permission();
            }();
            return ok;
        }
#endif
#if defined(__aarch64__)
        case Isa::neon: return true;  // every AArch64 CPU has Advanced SIMD
        case Isa::i8mm: {
            static const bool ok = arm_cpu_has_i8mm();
            return ok;
        }
#endif
        default: return false;
    }
}

// The picker's rule: row r, taken in table order, replaces the best so far.
bool pick_prefers(const KernelRow* best, const KernelRow& r, KernelOp op, uint32_t type, Layout layout, int n_tokens) {
    return r.op == op && r.type == type && r.layout == layout && r.min_tokens <= n_tokens &&
           (!best || r.min_tokens >= best->min_tokens);
}

bool row_built(const KernelRow& row) { return row.op == KernelOp::matmul ? row.matmul != nullptr : row.quantize != nullptr; }

}  // namespace

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx2_zen5: return "avx2-zen5";
        case Isa::avx512: return "avx512";
        case Isa::avx512_not_zen: return "avx512-not-zen";
        case Isa::avx512_not_zen4: return "avx512-not-zen4";
        case Isa::avx512_zen4: return "avx512-zen4";
        case Isa::amx: return "amx";
        case Isa::neon: return "neon";
        case Isa::i8mm: return "i8mm";
    }
    return "?";
}

const KernelRow* kernel_rows(int* n) {
    *n = kNumRows;
    return kRows;
}

bool kernel_row_available(const KernelRow& row) { return row_built(row) && cpu_has(row.isa); }

std::string kernel_row_name(const KernelRow& row) {
    return std::string(type_name(row.type)) + (row.layout == Layout::rows_x8 ? " x8 " : " ") + isa_name(row.isa) + " (from " +
           std::to_string(row.min_tokens) + ")";
}

bool kernel_row_runs_here(const KernelRow& row) {
    if (kernel_row_available(row)) return true;
    // A row for some CPUs only runs wherever the instruction set of its code does.
    KernelRow as_code = row;
    switch (row.isa) {
        case Isa::avx2_zen5: as_code.isa = Isa::avx2; break;
        case Isa::avx512_not_zen:
        case Isa::avx512_not_zen4:
        case Isa::avx512_zen4: as_code.isa = Isa::avx512; break;
        default: return false;
    }
    return kernel_row_available(as_code);
}

const KernelRow* pick_kernel(KernelOp op, uint32_t type, Layout layout, int n_tokens) {
    // The available rows, filled once at start-up (thread-safe static initialization).
    static const struct Available {
        const KernelRow* rows[kNumRows];
        int n = 0;
        Available() {
            for (const KernelRow& r : kRows)
                if (kernel_row_available(r)) rows[n++] = &r;
        }
    } available;
    const KernelRow* best = nullptr;
    for (int i = 0; i < available.n; i++)
        if (pick_prefers(best, *available.rows[i], op, type, layout, n_tokens)) best = available.rows[i];
    return best;
}

BatchTokenBits batch_token_bits(uint32_t type, Layout layout) {
    const bool batch = layout == Layout::rows_x8
                           ? type == TYPE_Q4_0 || type == TYPE_Q8_0 || type == TYPE_Q4_K || type == TYPE_Q5_K
                           : type == TYPE_Q6_K || type == TYPE_F32 || type == TYPE_F16 || type == TYPE_BF16;
    return batch ? BatchTokenBits::batch_rows : BatchTokenBits::one_token_row;
}

const KernelRow* pick_kernel_for(KernelOp op, uint32_t type, Layout layout, int n_tokens, bool (*has_isa)(Isa)) {
    const KernelRow* best = nullptr;
    for (const KernelRow& r : kRows)
        if (row_built(r) && has_isa(r.isa) && pick_prefers(best, r, op, type, layout, n_tokens)) best = &r;
    return best;
}

}  // namespace hearth
