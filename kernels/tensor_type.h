// Element types of stored tensors. The numbers are ggml's (GGUF's), so a GGUF tensor's
// type id means the same thing here, and quantized blocks have ggml's byte layout.
#pragma once
#include <cstdint>

enum TensorType : uint32_t {
    TYPE_F32 = 0,
    TYPE_F16 = 1,
    TYPE_Q4_0 = 2,
    TYPE_Q8_0 = 8,
    TYPE_Q4_K = 12,
    TYPE_Q6_K = 14,
    TYPE_Q8_K = 15,
    TYPE_BF16 = 30,
};

inline bool type_is_known(uint32_t t) {
    switch (t) {
        case TYPE_F32: case TYPE_F16: case TYPE_BF16: return true;
        default: return false;  // quantized types join when their kernels exist
    }
}
// Elements per block (1 for plain floats) and bytes per block.
inline uint64_t type_block_size(uint32_t t) {
    switch (t) {
        case TYPE_Q4_0: case TYPE_Q8_0: return 32;
        case TYPE_Q4_K: case TYPE_Q6_K: case TYPE_Q8_K: return 256;
        default: return 1;
    }
}
inline uint64_t type_block_bytes(uint32_t t) {
    switch (t) {
        case TYPE_F32: return 4;
        case TYPE_F16: case TYPE_BF16: return 2;
        case TYPE_Q4_0: return 18;
        case TYPE_Q8_0: return 34;
        case TYPE_Q4_K: return 144;
        case TYPE_Q6_K: return 210;
        case TYPE_Q8_K: return 292;
        default: return 0;
    }
}
inline const char* type_name(uint32_t t) {
    switch (t) {
        case TYPE_F32: return "f32";
        case TYPE_F16: return "f16";
        case TYPE_BF16: return "bf16";
        case TYPE_Q4_0: return "q4_0";
        case TYPE_Q8_0: return "q8_0";
        case TYPE_Q4_K: return "q4_k";
        case TYPE_Q6_K: return "q6_k";
        case TYPE_Q8_K: return "q8_k";
        default: return "unknown";
    }
}
