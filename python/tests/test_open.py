"""ggufkit.open reads what the command line reads: for every corpus file (and each in the
other byte order), the same metadata values, types and order as `ggufkit meta --json`, and
the same tensor records as `ggufkit tensors --json`."""
import collections.abc
import json
import math
import struct
import sys

import pytest

import ggufkit
from conftest import CORPUS, SPM, TINY, cli, cli_json, corpus_files


def as_json(v):
    """A Python value as `meta --json` writes it: bytes as {"hex"}, nan and inf as strings."""
    if isinstance(v, bytes):
        return {"hex": v.hex()}
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, list):
        return [as_json(x) for x in v]
    return v


def type_of(entry):
    return f"array[{entry['items']}]" if entry["type"] == "array" else entry["type"]


def assert_same_as_cli(path):
    r = cli("meta", "--json", path, check=False)
    if r.returncode != 0:  # refused: the same error, with the same where
        err = json.loads(r.stdout)["error"]
        with pytest.raises(ggufkit.Error) as e:
            ggufkit.open(path)
        assert (e.value.kind, e.value.exit_code, e.value.file, e.value.offset, e.value.field or None, e.value.message) == (
            err["kind"], err["exit"], err["file"], err["offset"], err["field"], err["message"])
        return None, None
    meta = json.loads(r.stdout)
    tensors = cli_json("tensors", "--json", path)
    f = ggufkit.open(path)
    assert f.version == meta["version"]
    assert list(f.metadata) == [e["key"] for e in meta["metadata"]]           # order
    assert len(f.metadata) == len(meta["metadata"])
    for (key, value), e in zip(f.metadata.items(), meta["metadata"]):
        assert as_json(value) == e["value"], key                              # values
        assert f.types[key] == type_of(e), key                                # types
        assert type(value) is not float or e["type"] in ("f32", "f64", "array")
    assert f.data_offset == tensors["data_offset"]
    assert f.files == tensors["files"]
    got = [{"name": t.name, "dims": t.dims, "type": t.type, "offset": t.offset, "bytes": t.nbytes} for t in f.tensors]
    want = [{k: t[k] for k in ("name", "dims", "type", "offset", "bytes")} for t in tensors["tensors"]]
    assert got == want
    if f.files > 1:
        assert [t.shard for t in f.tensors] == [t["shard"] for t in tensors["tensors"]]
    return f, meta


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_open_matches_meta_and_tensors_json(path):
    f, meta = assert_same_as_cli(path)
    assert meta is None or len(meta["metadata"]) > 0
    if path.name == "ggml-vocab-llama.v1.gguf":  # GGUF v1, which llama.cpp no longer reads: refused alike
        assert f is None


def test_the_corpus_files_the_command_refuses_are_refused_alike():
    refused = [p.name for p in corpus_files() if cli("meta", "--json", p, check=False).returncode != 0]
    assert refused == ["ggml-vocab-llama.v1.gguf"]


# Every corpus file the reader takes that is not a shard (convert works on one file).
SINGLE = [p for p in corpus_files() if "-of-" not in p.name and p.name != "ggml-vocab-llama.v1.gguf"]


@pytest.mark.parametrize("src", SINGLE, ids=lambda p: str(p.relative_to(CORPUS)))
def test_big_endian_file_matches_cli_and_its_little_endian_source(tmp_path, src):
    big = tmp_path / "big.gguf"
    cli("convert", src, "--byte-order", "big", "-o", big)
    fb, _ = assert_same_as_cli(big)
    fl = ggufkit.open(src)
    assert (fb.byte_order, fl.byte_order) == ("big", "little")
    assert [(k, as_json(v)) for k, v in fb.metadata.items()] == [(k, as_json(v)) for k, v in fl.metadata.items()]
    assert dict(fb.types.items()) == dict(fl.types.items())
    assert [(t.name, t.dims, t.type) for t in fb.tensors] == [(t.name, t.dims, t.type) for t in fl.tensors]
    for t in fl.tensors:  # the values decode the same from either order, the bytes are turned over
        assert fb.tensor_values(t.name).tolist() == fl.tensor_values(t.name).tolist(), t.name
        if t.type == "f32":
            assert fb.tensor_bytes(t.name).tobytes()[:4] == fl.tensor_bytes(t.name).tobytes()[:4][::-1]


def test_values_are_python_types_and_the_mapping_reads_like_a_dict():
    f = ggufkit.open(SPM)
    md = f.metadata
    assert isinstance(md, collections.abc.Mapping)
    assert md["general.architecture"] == "llama" and f.types["general.architecture"] == "string"
    assert md["tokenizer.ggml.eos_token_id"] == 2 and f.types["tokenizer.ggml.eos_token_id"] == "u32"
    tokens = md["tokenizer.ggml.tokens"]
    assert isinstance(tokens, list) and len(tokens) == 32000 and tokens[:3] == ["<unk>", "<s>", "</s>"]
    scores = md["tokenizer.ggml.scores"]
    assert f.types["tokenizer.ggml.scores"] == "array[f32]" and all(type(s) is float for s in scores[:10])
    assert md["tokenizer.ggml.token_type"][:4] == [2, 3, 3, 6]
    assert "general.architecture" in md and "no.such.key" not in md and 5 not in md
    assert md.get("no.such.key", 7) == 7
    with pytest.raises(KeyError):
        md["no.such.key"]
    assert dict(md.items())["general.name"] == md["general.name"]
    assert list(md.keys()) == list(iter(md))
    # where the pairs lie: the first pair follows the 24-byte head
    assert md.offset("general.architecture") == 24
    assert md.value_offset("general.architecture") == 24 + 8 + len("general.architecture") + 4


def test_an_f32_value_equals_the_decimal_it_was_written_as():
    f = ggufkit.open(TINY)
    assert f.types["llama.attention.layer_norm_rms_epsilon"] == "f32"
    assert f.metadata["llama.attention.layer_norm_rms_epsilon"] == 1e-5
    assert f.metadata["llama.rope.freq_base"] == 10000.0


def test_file_facts():
    f = ggufkit.open(TINY)
    size = TINY.stat().st_size
    assert (f.version, f.byte_order, f.alignment, f.file_size, f.files) == (3, "little", 32, size, 1)
    assert f.data_offset % 32 == 0 and f.data_offset == cli_json("tensors", "--json", TINY)["data_offset"]
    assert len(f.tensors) == 21 and f.tensors[0].name == "token_embd.weight" and f.tensors[0].dims == [64, 32000]
    assert f.tensor("output_norm.weight").nbytes == 256
    assert sum(t.nbytes for t in f.tensors) <= size - f.data_offset


def test_tensor_bytes_is_a_read_only_view_of_the_file_bytes():
    f = ggufkit.open(TINY)
    raw = TINY.read_bytes()
    for t in f.tensors:
        mv = f.tensor_bytes(t.name)
        assert isinstance(mv, memoryview) and mv.readonly and mv.nbytes == t.nbytes
        start = f.data_offset + t.offset
        assert mv.tobytes() == raw[start:start + t.nbytes], t.name
    mv = f.tensor_bytes("output_norm.weight")
    with pytest.raises(TypeError):
        mv[0] = 1
    f.close()
    assert mv.tobytes()[:4] == struct.pack("<f", 1.0)  # the view outlives the file object


def test_tensor_values_decode_f32_f16_and_q8_0():
    f = ggufkit.open(TINY)
    norm = f.tensor_values("output_norm.weight")
    assert list(norm) == [1.0] * 64
    q = f.tensor_values("blk.0.attn_q.weight")  # f16
    assert q.shape == (64, 64)  # outermost first, as numpy and gguf-py shape it
    raw = f.tensor_bytes("blk.0.attn_q.weight").tobytes()
    assert [float(x) for x in q[0, :8]] == [x[0] for x in struct.iter_unpack("<e", raw[:16])]
    ffn = f.tensor_values("blk.0.ffn_up.weight")  # q8_0: scale * int8 per block of 32
    blk = f.tensor_bytes("blk.0.ffn_up.weight").tobytes()[:34]
    d = struct.unpack("<e", blk[:2])[0]
    assert [float(x) for x in ffn[0, :32]] == [d * q8 for q8 in struct.unpack("<32b", blk[2:34])]


def test_tensor_values_without_numpy_is_a_list(monkeypatch):
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy now raises ImportError
    v = ggufkit.open(TINY).tensor_values("output_norm.weight")
    assert isinstance(v, list) and v == [1.0] * 64


def test_a_shard_opens_its_whole_set():
    merged = ggufkit.open(CORPUS / "splits" / "merged-by-llama.gguf")
    for shard in ["by-count-00002-of-00003.gguf", "by-size-00001-of-00002.gguf", "metadata-first-00004-of-00004.gguf"]:
        f = ggufkit.open(CORPUS / "splits" / shard)
        assert f.files == int(shard.split("-of-")[1][:5])
        assert [(t.name, t.dims, t.type, t.nbytes) for t in f.tensors] == [(t.name, t.dims, t.type, t.nbytes) for t in merged.tensors]
        assert not any(k.startswith("split.") for k in f.metadata)
        assert f.tensor_bytes("output_norm.weight").tobytes() == merged.tensor_bytes("output_norm.weight").tobytes()
    alone = ggufkit.open(CORPUS / "splits" / "by-count-00002-of-00003.gguf", shard_only=True)
    assert alone.files == 1 and alone.metadata["split.no"] == 1 and len(alone.tensors) < len(merged.tensors)


def test_map_covers_the_file_as_the_map_command_does():
    spans = ggufkit.open(TINY).map()
    want = cli_json("map", "--json", TINY)
    assert [(s.kind, s.offset, s.size, s.field) for s in spans] == [(s["kind"], s["offset"], s["size"], s["name"]) for s in want["spans"]]
    assert spans[0].kind == "magic" and (spans[0].offset, spans[0].size) == (0, 4)
    assert all(a.end == b.offset for a, b in zip(spans, spans[1:]))
    assert spans[-1].end == TINY.stat().st_size


def test_a_closed_file_says_so():
    f = ggufkit.open(SPM)
    md = f.metadata
    with f:
        pass
    assert f.closed
    with pytest.raises(ValueError, match="closed"):
        f.version
    with pytest.raises(ValueError, match="closed"):
        md["general.name"]
