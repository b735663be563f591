#!/usr/bin/env python3
"""Writes the GGUF seed corpus (gguf/*.gguf) in llama.cpp's layout, standard library only.

Layout (gguf.cpp, gguf_write_to_buf): "GGUF", uint32 version, uint64 tensor
count, uint64 key/value count; key/values (string key, uint32 type, value);
tensor infos (string name, uint32 n_dims, uint64 dims, uint32 ggml type,
uint64 offset); zero padding to the alignment; each tensor's data padded to
the alignment. Strings are a uint64 length and bytes; arrays a uint32 element
type, a uint64 count and the elements. Small on purpose: the fuzzer mutates
headers, and every seed should be quick to run.
Run: python3 make_gguf_seeds.py   (writes into gguf/ beside this file)
"""
import os
import struct

UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
SCALAR = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i", FLOAT32: "<f",
          BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}
# ggml type: (id, elements per block, bytes per block)
F32, F16, Q4_0, Q8_0, Q4_K, I8, BF16, Q6_K = (0, 1, 4), (1, 1, 2), (2, 32, 18), (8, 32, 34), (12, 256, 144), \
    (24, 1, 1), (30, 1, 2), (14, 256, 210)


def string(s):
    data = s.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def payload(vtype, value):
    if vtype == STRING:
        return string(value)
    if vtype == ARRAY:
        element_type, elements = value
        return struct.pack("<IQ", element_type, len(elements)) + b"".join(payload(element_type, e) for e in elements)
    return struct.pack(SCALAR[vtype], value)


def gguf(kvs, tensors, alignment=32, version=3):
    """kvs: [(key, type, value)]; tensors: [(name, dims, ggml type)] with data counting up."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, value in kvs:
        out += string(key) + struct.pack("<I", vtype) + payload(vtype, value)
    datas, offset = [], 0
    for name, dims, (type_id, block, size) in tensors:
        elements = 1
        for d in dims:
            elements *= d
        data = bytes((i * 7 + len(datas)) % 256 for i in range(elements // block * size))
        out += string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", type_id, offset)
        datas.append(data)
        offset += (len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * (-len(out) % alignment)
    for data in datas:
        out += data + b"\0" * (-len(data) % alignment)
    return out


SEEDS = {
    "tiny_llama": gguf(
        [("general.architecture", STRING, "llama"), ("general.name", STRING, "tiny"),
         ("llama.context_length", UINT32, 128), ("llama.rope.freq_base", FLOAT32, 10000.0),
         ("llama.attention.layer_norm_rms_epsilon", FLOAT64, 1e-5), ("general.file_type", UINT16, 7),
         ("u8", UINT8, 255), ("i8", INT8, -1), ("i16", INT16, -2), ("i32", INT32, -3), ("u64", UINT64, 2**40),
         ("i64", INT64, -(2**40)), ("add_bos", BOOL, True),
         ("tokenizer.ggml.tokens", ARRAY, (STRING, ["<unk>", "<s>", "</s>", "a", "b"])),
         ("tokenizer.ggml.scores", ARRAY, (FLOAT32, [0.0, 0.0, 0.0, -1.0, -2.0])),
         ("tokenizer.ggml.token_type", ARRAY, (INT32, [2, 3, 3, 1, 1])),
         ("flags", ARRAY, (BOOL, [True, False])),
         ("nested", ARRAY, (ARRAY, [(UINT8, [1, 2]), (STRING, ["x"]), (ARRAY, [])]))],
        [("token_embd.weight", [64, 5], Q8_0), ("output_norm.weight", [64], F32),
         ("blk.0.attn_q.weight", [256, 2], Q4_K), ("blk.0.attn_k.weight", [64, 2], Q4_0),
         ("blk.0.ffn_up.weight", [16, 2], F16), ("blk.0.ffn_down.weight", [16, 2], BF16),
         ("blk.0.ffn_gate.weight", [256], Q6_K), ("rope_freqs", [8], I8)]),
    "alignment_64": gguf([("general.alignment", UINT32, 64), ("general.architecture", STRING, "gpt2")],
                         [("a", [3], F32), ("b", [2, 2], F16)], alignment=64),
    "vocab_only": gguf([("tokenizer.ggml.model", STRING, "gpt2"),
                        ("tokenizer.ggml.tokens", ARRAY, (STRING, ["h", "e", "l", "o", "he", "ll"])),
                        ("tokenizer.ggml.merges", ARRAY, (STRING, ["h e", "l l"]))], []),
    "misaligned": gguf([("general.alignment", UINT32, 1)], [("skip", [1], I8), ("f32", [4], F32)], alignment=1),
    "empty": gguf([], []),
    "version_2": gguf([("general.name", STRING, "v2")], [("t", [4], F32)], version=2),
}


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf")
    os.makedirs(out_dir, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out_dir, name + ".gguf"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
