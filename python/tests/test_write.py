"""ggufkit.write makes the file a sketch dict describes and ggufkit.dump gives the dict back;
files broken on purpose fail to open with the byte offset and the field of their fault."""
import json
import math

import pytest

import ggufkit
from conftest import CORPUS, SPM, TINY, cli, cli_json, digest

SKETCH = {
    "version": 3,
    "metadata": [
        {"key": "general.architecture", "type": "string", "value": "llama"},
        {"key": "general.alignment", "type": "u32", "value": 64},
        {"key": "t.u8", "type": "u8", "value": 255},
        {"key": "t.i16", "type": "i16", "value": -32768},
        {"key": "t.u64", "type": "u64", "value": 18446744073709551615},
        {"key": "t.f32", "type": "f32", "value": 0.1},
        {"key": "t.f64", "type": "f64", "value": -0.0},
        {"key": "t.nan", "type": "f32", "value": float("nan")},
        {"key": "t.bool", "type": "bool", "value": True},
        {"key": "t.str", "type": "string", "value": "h\u00e9llo \u2603 \U0001F600 \"quoted\" \\ \n"},
        {"key": "t.bytes", "type": "string", "value": {"hex": "ff00fe"}},
        {"key": "t.strs", "type": "array", "items": "string", "value": ["a", "", "c"]},
        {"key": "t.i32s", "type": "array", "items": "i32", "value": [1, -2, 3]},
        {"key": "t.nested", "type": "array", "items": "array",
         "value": [{"items": "u8", "value": [1, 2]}, {"items": "string", "value": ["x"]}]},
    ],
    "tensors": [
        {"name": "w", "type": "f32", "dims": [4, 2], "values": [0.5, -1.5, 2, 3, 4, 5, 6, 7]},
        {"name": "b", "type": "f16", "dims": [3], "fill": "ones"},
    ],
}


def test_a_sketch_dict_written_and_opened_gives_its_values_back(tmp_path):
    out = tmp_path / "s.gguf"
    r = ggufkit.write(SKETCH, out)
    assert r["path"] == str(out) and r["file_size"] == out.stat().st_size and (r["tensors"], r["keys"]) == (2, 14)
    f = ggufkit.open(out)
    got = dict(f.metadata.items())
    for e in SKETCH["metadata"]:
        want = e["value"]
        if e["type"] == "array" and e["items"] == "array":
            want = [x["value"] for x in want]
        if isinstance(want, dict):
            want = bytes.fromhex(want["hex"])
        v = got[e["key"]]
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(v)
        else:
            assert v == want and type(v) is type(want) or (type(want) is int and type(v) is float), e["key"]
        assert f.types[e["key"]] == (f"array[{e['items']}]" if e["type"] == "array" else e["type"])
    assert math.copysign(1, got["t.f64"]) == -1.0
    assert f.alignment == 64 and f.data_offset % 64 == 0
    assert [(t.name, t.dims, t.type, t.offset, t.nbytes) for t in f.tensors] == [("w", [4, 2], "f32", 0, 32), ("b", [3], "f16", 64, 6)]
    assert f.tensor_values("w").tolist() == [[0.5, -1.5, 2, 3], [4, 5, 6, 7]]  # dims [4, 2]: 2 rows of 4
    assert list(f.tensor_values("b")) == [1.0, 1.0, 1.0]
    # write judges what it wrote as validate does
    assert [(x.code, x.offset) for x in r["findings"]] == [(x.code, x.offset) for x in ggufkit.validate(out)]
    assert "missing_hparam" in {x.code for x in r["findings"]}  # a llama with no hyperparameters


def test_the_dict_and_the_same_sketch_as_a_file_write_the_same_bytes(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SKETCH).replace("NaN", "\"nan\""))
    ggufkit.write(SKETCH, tmp_path / "a.gguf")
    cli("write", tmp_path / "s.json", "-o", tmp_path / "b.gguf")
    assert (tmp_path / "a.gguf").read_bytes() == (tmp_path / "b.gguf").read_bytes()
    ggufkit.write(tmp_path / "s.json", tmp_path / "c.gguf")  # a path is a sketch file
    assert digest(tmp_path / "c.gguf") == digest(tmp_path / "a.gguf")


@pytest.mark.parametrize("path", [TINY, SPM, CORPUS / "vocab" / "ggml-vocab-bert-bge.gguf"], ids=lambda p: p.name)
def test_dump_then_write_gives_the_file_back_byte_for_byte(tmp_path, path):
    d = ggufkit.dump(path)
    assert d == cli_json("dump", "--format", "json", path)
    ggufkit.write(d, tmp_path / "again.gguf")
    assert digest(tmp_path / "again.gguf") == digest(path)
    inline = ggufkit.dump(path, inline_data=True)
    ggufkit.write(inline, tmp_path / "inline.gguf")
    assert digest(tmp_path / "inline.gguf") == digest(path)


def test_a_broken_file_fails_to_open_at_the_offset_and_field_of_its_fault(tmp_path):
    good = tmp_path / "good.gguf"
    ggufkit.write({"metadata": SKETCH["metadata"][:3]}, good)
    key1 = next(s for s in ggufkit.open(good).map() if s.kind == "kv_key" and s.field.startswith("kv[1] "))
    broken = {"metadata": [dict(SKETCH["metadata"][0]), dict(SKETCH["metadata"][1], raw={"key_length": 1 << 40}), SKETCH["metadata"][2]]}
    bad = tmp_path / "bad.gguf"
    ggufkit.write(broken, bad)  # broken on purpose: written as asked
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.open(bad)
    assert e.value.offset == key1.offset == 24 + 8 + 20 + 4 + 8 + 5
    assert e.value.field.startswith("kv[1]") and e.value.kind == "format" and e.value.code == "format"
    assert e.value.file == str(bad) and f"at byte {key1.offset}" in str(e.value)
    err = json.loads(cli("meta", "--json", bad, check=False).stdout)["error"]
    assert (e.value.offset, e.value.field, e.value.message) == (err["offset"], err["field"], err["message"])
    findings = ggufkit.validate(bad)
    assert [(x.code, x.offset) for x in findings if x.severity == "error"][0] == ("read", key1.offset)


def test_check_refuses_a_sketch_validate_finds_errors_in_and_writes_nothing(tmp_path):
    out = tmp_path / "refused.gguf"
    sketch = {"metadata": [{"key": "general.architecture", "type": "string", "value": "llama"},
                           {"key": "general.alignment", "type": "u32", "value": 16}]}
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.write(sketch, out, check=True)
    assert e.value.code == "alignment_too_small" and "alignment_too_small" in [f.code for f in e.value.findings if f.severity == "error"]
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_sketch_error_names_the_entry(tmp_path):
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.write({"metadata": [{"key": "x", "type": "u16", "value": 70000}]}, tmp_path / "x.gguf")
    assert "metadata[0] x" in str(e.value) and "out of range for u16" in str(e.value)
    assert not (tmp_path / "x.gguf").exists()


def test_defines_fill_placeholders(tmp_path):
    out = tmp_path / "d.gguf"
    ggufkit.write({"metadata": [{"key": "general.name", "type": "string", "value": "[[NAME]]"}]}, out, defines={"NAME": "Filled"})
    assert ggufkit.open(out).metadata["general.name"] == "Filled"
