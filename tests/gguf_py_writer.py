#!/usr/bin/env python3
"""An encoder independent of ggufkit's, for tests: writes a GGUF file from a JSON spec by
gguf-py's GGUFWriter rules (gguf-py/gguf/gguf_writer.py), in the standard library alone.

  python3 gguf_py_writer.py SPEC.json OUT.gguf

SPEC: {"kv": [[key, type, value], ...], "tensors": [[name, ggml_type, [ne0, ne1, ...]], ...]}
with type one of u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool string, or "array:ELEM"
(value a list). Tensors are f32 or f16, filled with (i % 7 - 3) / 64 for element i.

The rules it follows, as GGUFWriter writes a file: the 24-byte head (GGUF, version 3,
tensor count, KV count), each KV as key, u32 type, value (strings and keys a u64 length
and the bytes; arrays an element type, a u64 count, the items), each tensor info as
name, u32 n_dims, the dims innermost first (numpy's shape reversed), u32 ggml type, u64
offset in the data section (each tensor's size rounded up to the alignment); zero
padding to general.alignment (32 when absent) after the infos; each tensor's data,
zero-padded to the alignment.
"""
import json
import struct
import sys

SCALARS = {"u8": ("<B", 0), "i8": ("<b", 1), "u16": ("<H", 2), "i16": ("<h", 3), "u32": ("<I", 4),
           "i32": ("<i", 5), "f32": ("<f", 6), "bool": ("<?", 7), "u64": ("<Q", 10), "i64": ("<q", 11),
           "f64": ("<d", 12)}
STRING, ARRAY = 8, 9
GGML = {"f32": (0, 4, "<f"), "f16": (1, 2, "<e")}


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    if t == "string":
        return struct.pack("<I", STRING) + gguf_string(v)
    if t.startswith("array:"):
        elem = t[6:]
        out = struct.pack("<I", ARRAY)
        out += struct.pack("<I", STRING if elem == "string" else SCALARS[elem][1]) + struct.pack("<Q", len(v))
        for item in v:
            out += gguf_string(item) if elem == "string" else struct.pack(SCALARS[elem][0], item)
        return out
    fmt, code = SCALARS[t]
    return struct.pack("<I", code) + struct.pack(fmt, v)


def pad(n, align):
    return (align - n % align) % align


def main(spec_path, out_path):
    spec = json.load(open(spec_path))
    kvs, tensors = spec.get("kv", []), spec.get("tensors", [])
    align = 32
    for k, t, v in kvs:
        if k == "general.alignment":
            align = v
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        head += gguf_string(k) + value(t, v)
    data, offset = b"", 0
    for name, ty, dims in tensors:
        code, size, fmt = GGML[ty]
        n = 1
        for d in dims:
            n *= d
        head += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        head += struct.pack("<IQ", code, offset)
        blob = b"".join(struct.pack(fmt, (i % 7 - 3) / 64) for i in range(n))
        data += blob + bytes(pad(len(blob), align))
        offset += len(blob) + pad(len(blob), align)
    with open(out_path, "wb") as f:
        f.write(head + bytes(pad(len(head), align)) + data)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
