"""numpy in the module. write() takes numpy arrays for tensor data and metadata arrays, their
dtype giving the GGUF type and their shape the dims, and writes the bytes the same sketch
gives with explicit types and lists; tensor_values is shaped as numpy shapes it, outermost
first, as gguf-py (llama.cpp's own Python reader) shapes it on every corpus tensor; what has
no GGUF type or layout is refused, naming the entry; numpy stays optional."""
import io
import os
import pathlib
import subprocess
import sys
import tarfile

import numpy as np
import pytest

import ggufkit
from conftest import TINY, cli, corpus_files

INTEROP = pathlib.Path(os.environ.get("GGUFKIT_INTEROP_DIR") or pathlib.Path.home() / ".cache" / "ggufkit-interop")
BUNDLE = INTEROP / "node_modules" / "node-llama-cpp" / "llama" / "gitRelease.bundle"

ARCH = {"key": "general.architecture", "type": "string", "value": "numpy"}


def write_both(tmp_path, arrays, lists):
    """The bytes of the sketch with numpy arrays and of the same sketch with types and lists."""
    a, b = tmp_path / "arrays.gguf", tmp_path / "lists.gguf"
    ggufkit.write(arrays, a)
    ggufkit.write(lists, b)
    return a.read_bytes(), b.read_bytes()


# Every metadata element type at its edges: what tolist() gives is the list sketch's value.
METADATA = [
    ("u8", np.array([0, 1, 255], np.uint8)),
    ("i8", np.array([-128, -1, 127], np.int8)),
    ("u16", np.array([0, 65535], np.uint16)),
    ("i16", np.array([-32768, 0, 32767], np.int16)),
    ("u32", np.array([0, 4294967295], np.uint32)),
    ("i32", np.array([-2147483648, 7, 2147483647], np.int32)),
    ("u64", np.array([0, 18446744073709551615], np.uint64)),
    ("i64", np.array([-9223372036854775808, 9223372036854775807], np.int64)),
    ("f32", np.array([0.1, -0.0, 1e-45, 3.4028235e38, np.inf, -np.inf, np.nan], np.float32)),
    ("f64", np.array([0.1, -0.0, 5e-324, 1.7976931348623157e308, -np.inf, np.nan], np.float64)),
    ("bool", np.array([True, False, True])),
]


def test_metadata_arrays_from_numpy_write_the_bytes_of_typed_lists(tmp_path):
    arrays = {"metadata": [ARCH] + [{"key": f"a.{t}", "value": a} for t, a in METADATA]}
    lists = {"metadata": [ARCH] + [{"key": f"a.{t}", "type": "array", "items": t, "value": a.tolist()} for t, a in METADATA]}
    got, want = write_both(tmp_path, arrays, lists)
    assert got == want
    f = ggufkit.open(tmp_path / "arrays.gguf")
    for t, a in METADATA:
        assert f.types[f"a.{t}"] == f"array[{t}]"
        back = np.array(f.metadata[f"a.{t}"], a.dtype)  # an f32 comes back as the float of its shortest text
        assert np.array_equal(back, a, equal_nan=t in ("f32", "f64")), t
    # the caller's entries are left as given: no type or items put in them
    assert [sorted(e) for e in arrays["metadata"][1:]] == [["key", "value"]] * len(METADATA)


def test_metadata_arrays_in_the_other_byte_order_or_with_items_given_write_the_same_as_lists(tmp_path):
    # items given: the elements converted as the list's are (i32 to i64, f32 widened to f64)
    given = [("i64", np.array([-5, 6], np.int32)), ("f64", np.array([0.1, -2.5], np.float32)),
             ("u8", np.array([1, 2], np.int64)), ("f32", np.array([1, -7], np.int16)),
             ("i32", np.array([1, 2], ">i4")), ("f64", np.array([0.1], ">f8")), ("bool", np.array([1, 0], np.uint8))]
    arrays = {"metadata": [ARCH] + [{"key": f"g{i}", "items": t, "value": a} for i, (t, a) in enumerate(given)]}
    lists = {"metadata": [ARCH] + [{"key": f"g{i}", "type": "array", "items": t, "value": a.tolist()} for i, (t, a) in enumerate(given)]}
    got, want = write_both(tmp_path, arrays, lists)
    assert got == want
    f = ggufkit.open(tmp_path / "arrays.gguf")
    assert [f.types[f"g{i}"] for i in range(len(given))] == [f"array[{t}]" for t, _ in given]
    assert f.metadata["g1"] == [float(np.float32(0.1)), -2.5] and f.metadata["g6"] == [True, False]
    # an array inside a nested array's item is the list of its elements too
    nested = {"metadata": [{"key": "n", "type": "array", "items": "array", "value": [{"items": "u16", "value": np.array([1, 2], np.uint16)}]}]}
    ggufkit.write(nested, tmp_path / "nested.gguf")
    assert ggufkit.open(tmp_path / "nested.gguf").metadata["n"] == [[1, 2]]


# Tensors of every type ggml shares with numpy, 1-d to 4-d.
TENSORS = [
    ("t2", "f32", np.arange(12, dtype=np.float32).reshape(3, 4) / 7),
    ("t3", "f16", (np.arange(24, dtype=np.float16) - 12).reshape(2, 3, 4) / 3),
    ("t4", "f32", np.linspace(-1, 1, 120, dtype=np.float32).reshape(2, 3, 4, 5)),
    ("i8", "i8", np.array([-128, 0, 127, 5, -5], np.int8)),
    ("i16", "i16", np.array([[-32768, 1, 2], [3, 4, 32767]], np.int16)),
    ("i32", "i32", np.array([-2147483648, 0, 2147483647, 9], np.int32)),
    ("i64", "i64", np.array([-9223372036854775808, 1, 9223372036854775807], np.int64)),
    ("f64", "f64", np.array([[0.1, -0.0], [1e300, -3.5]], np.float64)),
]


def lists_of(tensors, **extra):
    return {**extra, "metadata": [ARCH], "tensors": [
        {"name": n, "type": t, "dims": list(reversed(a.shape)), "values": a.ravel().tolist()} for n, t, a in tensors]}


def test_tensors_from_numpy_take_type_and_dims_from_dtype_and_shape(tmp_path):
    arrays = {"metadata": [ARCH], "tensors": [{"name": n, "values": a} for n, _, a in TENSORS]}
    got, want = write_both(tmp_path, arrays, lists_of(TENSORS))
    assert got == want
    f = ggufkit.open(tmp_path / "arrays.gguf")
    assert [(t.name, t.type, t.dims) for t in f.tensors] == [(n, t, list(reversed(a.shape))) for n, t, a in TENSORS]
    assert f.tensor("t2").dims == [4, 3] and f.tensor("t3").dims == [4, 3, 2] and f.tensor("t4").dims == [5, 4, 3, 2]
    for n, t, a in TENSORS:
        assert f.tensor_bytes(n).tobytes() == a.astype(a.dtype.newbyteorder("<")).tobytes(), n
        if t in ("f32", "f16"):  # the types tensor_values decodes: each value back, in its place
            v = f.tensor_values(n)
            assert v.shape == a.shape and v.dtype == np.float32 and np.array_equal(v, a.astype(np.float32)), n
    assert [sorted(e) for e in arrays["tensors"]] == [["name", "values"]] * len(TENSORS)  # left as given


def test_a_big_endian_file_gets_each_array_in_its_byte_order(tmp_path):
    mixed = [(n, t, a if i % 2 else a.astype(a.dtype.newbyteorder(">"))) for i, (n, t, a) in enumerate(TENSORS)]
    meta = [{"key": "m.le", "value": np.array([1, -2, 3], "<i4")}, {"key": "m.be", "value": np.array([0.5, -0.25], ">f4")}]
    w = np.linspace(-2, 2, 64, dtype=np.float32).reshape(2, 32)
    arrays = {"byte_order": "big", "metadata": [ARCH, *meta], "tensors": [{"name": n, "values": a} for n, _, a in mixed]
              + [{"name": "bf16", "type": "bf16", "values": w}, {"name": "f16", "type": "f16", "values": w.astype(">f4")}]}
    lists = lists_of(TENSORS + [("bf16", "bf16", w), ("f16", "f16", w)], byte_order="big")
    lists["metadata"] += [{"key": "m.le", "type": "array", "items": "i32", "value": [1, -2, 3]},
                          {"key": "m.be", "type": "array", "items": "f32", "value": [0.5, -0.25]}]
    got, want = write_both(tmp_path, arrays, lists)
    assert got == want
    f = ggufkit.open(tmp_path / "arrays.gguf")
    assert f.byte_order == "big" and f.metadata["m.le"] == [1, -2, 3] and f.metadata["m.be"] == [0.5, -0.25]
    for n, _, a in TENSORS:
        assert f.tensor_bytes(n).tobytes() == a.astype(a.dtype.newbyteorder(">")).tobytes(), n
    assert np.array_equal(f.tensor_values("t3"), TENSORS[1][2].astype(np.float32))
    assert f.tensor_bytes("f16").tobytes() == w.astype(">f2").tobytes()


def test_a_tensor_past_the_sketch_texts_cap_is_written_whole(tmp_path):
    # 32 MiB of float32: as hex or a values list its text would pass the 64 MiB a sketch's
    # text may hold; an array's data reaches the library as bytes, not text.
    a = np.random.default_rng(7).standard_normal((2048, 4096), dtype=np.float32)
    fds = len(os.listdir("/proc/self/fd"))
    r = ggufkit.write({"metadata": [ARCH], "tensors": [{"name": "w", "values": a}, {"name": "q", "type": "q8_0", "values": a}]},
                      tmp_path / "big.gguf")
    assert len(os.listdir("/proc/self/fd")) == fds  # the arrays' file in memory is closed
    f = ggufkit.open(tmp_path / "big.gguf")
    assert [(t.name, t.type, t.dims, t.nbytes) for t in f.tensors] == [("w", "f32", [4096, 2048], a.nbytes),
                                                                        ("q", "q8_0", [4096, 2048], a.size // 32 * 34)]
    assert f.tensor_bytes("w").tobytes() == a.tobytes() and r["tensors"] == 2
    # q8_0 quantizes each row alone: the first rows as a values list quantize to the same bytes
    ggufkit.write({"tensors": [{"name": "q", "type": "q8_0", "dims": [4096, 16], "values": a[:16].ravel().tolist()}]}, tmp_path / "rows.gguf")
    assert f.tensor_bytes("q")[:16 * 4096 // 32 * 34] == ggufkit.open(tmp_path / "rows.gguf").tensor_bytes("q")


def test_a_type_other_than_the_dtype_encodes_the_arrays_values(tmp_path):
    w = np.sin(np.arange(128, dtype=np.float32)).reshape(4, 32)
    other = [("bf16", "bf16", w), ("f16", "f16", w), ("q8_0", "q8_0", w), ("q4_0", "q4_0", w), ("f64", "f64", w),
             ("f32_of_i32", "f32", np.array([[1, -2], [3, 4]], np.int32)), ("i32_of_i8", "i32", np.array([-1, 2], np.int8))]
    arrays = {"metadata": [ARCH], "tensors": [{"name": n, "type": t, "values": a} for n, t, a in other]}
    got, want = write_both(tmp_path, arrays, lists_of(other))
    assert got == want
    f = ggufkit.open(tmp_path / "arrays.gguf")
    assert [(t.name, t.type, t.dims) for t in f.tensors] == [(n, t, list(reversed(a.shape))) for n, t, a in other]
    assert np.array_equal(f.tensor_values("f16"), w.astype(np.float16).astype(np.float32))
    # dims of its own: a flat array laid out as the matrix they say
    ggufkit.write({"metadata": [ARCH], "tensors": [{"name": "w", "dims": [32, 4], "values": w.ravel()}]}, tmp_path / "flat.gguf")
    ggufkit.write({"metadata": [ARCH], "tensors": [{"name": "w", "values": w}]}, tmp_path / "shaped.gguf")
    assert (tmp_path / "flat.gguf").read_bytes() == (tmp_path / "shaped.gguf").read_bytes()


def test_edit_sets_a_numpy_array_as_it_sets_the_list(tmp_path, spm_copy):
    a = tmp_path / "a.gguf"
    b = tmp_path / "b.gguf"
    ggufkit.edit(spm_copy, set={"x.ids": np.array([3, 1, 2], np.int32), "tokenizer.ggml.scores": np.zeros(32000, np.float32)}, out=a)
    ggufkit.edit(spm_copy, set={"x.ids": [3, 1, 2], "tokenizer.ggml.scores": [0.0] * 32000}, out=b)
    assert a.read_bytes() == b.read_bytes()
    f = ggufkit.open(a)
    assert f.metadata["x.ids"] == [3, 1, 2] and f.metadata["tokenizer.ggml.scores"][:2] == [0.0, 0.0]


# ---- tensor_values against gguf-py -----------------------------------------------------

@pytest.fixture(scope="module")
def gguf_py(tmp_path_factory):
    """gguf-py, llama.cpp's Python package, from the llama.cpp release node-llama-cpp carries."""
    if not BUNDLE.is_file():
        pytest.fail(f"gguf-py comes from llama.cpp's release in {BUNDLE}, which is missing: `make interop-deps` installs it")
    d = tmp_path_factory.mktemp("gguf-py")
    subprocess.run(["git", "clone", "--bare", "-q", str(BUNDLE), str(d / "b")], check=True)
    tar = subprocess.run(["git", f"--git-dir={d / 'b'}", "archive", "HEAD", "gguf-py"], check=True, capture_output=True).stdout
    tarfile.open(fileobj=io.BytesIO(tar)).extractall(d)
    sys.path.insert(0, str(d / "gguf-py"))
    try:
        import gguf
    finally:
        sys.path.remove(str(d / "gguf-py"))
    assert pathlib.Path(gguf.__file__).is_relative_to(d)
    return gguf


# The types gguf-py gives as values (data shaped as the tensor); the others it gives as bytes,
# a row's elements becoming its bytes in the last dimension.
DECODED = {"F32", "F16", "F64", "I8", "I16", "I32", "I64"}


def check_against(gguf, f, t, reference=None):
    """tensor_values of gguf-py's tensor t against gguf-py: its logical shape (tensor.shape
    reversed) always; data.shape where gguf-py decodes, else data's byte shape; the values
    equal gguf-py's data or its dequantize (or `reference`, for a big-endian quantized
    tensor, whose bytes gguf-py does not turn over)."""
    ours = f.tensor_values(t.name)
    assert isinstance(ours, np.ndarray) and ours.dtype == np.float32
    logical = tuple(reversed(t.shape.tolist()))
    assert ours.shape == logical == tuple(reversed(f.tensor(t.name).dims)), t.name
    if t.tensor_type.name in DECODED:
        assert t.data.shape == ours.shape, t.name
        ref = t.data
    else:
        block, size = gguf.GGML_QUANT_SIZES[t.tensor_type]
        assert t.data.shape == ours.shape[:-1] + (ours.shape[-1] // block * size,), t.name
        with np.errstate(invalid="ignore", over="ignore"):  # random bytes hold NaN scales
            ref = gguf.quants.dequantize(t.data, t.tensor_type) if reference is None else reference
    assert np.array_equal(ours, np.asarray(ref, np.float32), equal_nan=True), t.name
    return ours


def test_tensor_values_shape_equals_gguf_pys_on_every_corpus_tensor(gguf_py):
    compared, refused = set(), []
    for path in corpus_files():
        try:
            r = gguf_py.GGUFReader(path)
        except ValueError as e:  # gguf-py reads versions 2 and 3; so do ggufkit and llama.cpp
            assert "version 1" in str(e), path
            with pytest.raises(ggufkit.Error, match="this is GGUF v1"):
                ggufkit.open(path, shard_only=True)
            refused.append(path.name)
            continue
        f = ggufkit.open(path, shard_only=True)  # the file's own tensors, as gguf-py reads them
        assert [t.name for t in r.tensors] == [t.name for t in f.tensors], path
        for t in r.tensors:
            check_against(gguf_py, f, t)
            compared.add((path.name, t.name, t.tensor_type.name))
    assert refused == ["ggml-vocab-llama.v1.gguf"]
    # every tensor of the 12 files that hold any: 2-d and 1-d, f32, f16 and q8_0
    assert len(compared) == 105 and {k for _, _, k in compared} == {"F32", "F16", "Q8_0"}


TYPES = {"f32": [2, 3, 4, 5], "f16": [4, 3, 2], "bf16": [7], "q8_0": [64, 3], "q4_0": [32, 2, 2], "q4_1": [32, 3],
         "q5_0": [32, 3], "q5_1": [32, 3], "q2_K": [256, 2], "q3_K": [256, 2], "q4_K": [256, 2, 2], "q5_K": [256, 2],
         "q6_K": [256, 1, 1, 2]}


def test_tensor_values_equal_gguf_pys_on_every_decodable_type_in_both_byte_orders(tmp_path, gguf_py):
    little, big = tmp_path / "little.gguf", tmp_path / "big.gguf"
    ggufkit.write({"metadata": [ARCH], "tensors": [{"name": t, "type": t, "dims": d, "fill": {"random_bytes": {"seed": i + 1}}}
                                                   for i, (t, d) in enumerate(TYPES.items())]}, little)
    cli("convert", little, "--byte-order", "big", "-o", big)
    fl, fb = ggufkit.open(little), ggufkit.open(big)
    rl, rb = gguf_py.GGUFReader(little), gguf_py.GGUFReader(big)
    assert [t.name for t in rl.tensors] == [t.name for t in rb.tensors] == list(TYPES)
    for tl, tb in zip(rl.tensors, rb.tensors):
        ours = check_against(gguf_py, fl, tl)
        assert ours.shape == tuple(reversed(TYPES[tl.name]))
        check_against(gguf_py, fb, tb, reference=ours)


def test_tensor_values_is_an_array_of_its_own_and_nested_lists_without_numpy(monkeypatch):
    f = ggufkit.open(TINY)
    v = f.tensor_values("blk.0.attn_k.weight")  # f16, dims [64, 32]
    assert v.shape == (32, 64) and v.flags.writeable and v.flags.c_contiguous
    first = float(v[0, 0])
    v[0, 0] = 42  # its own memory: the next call decodes afresh
    assert f.tensor_values("blk.0.attn_k.weight")[0, 0] == first
    f.close()
    assert v[0, 0] == 42  # and outlives the file
    v[0, 0] = first
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy now raises ImportError
    nested = ggufkit.open(TINY).tensor_values("blk.0.attn_k.weight")
    assert isinstance(nested, list) and len(nested) == 32 and len(nested[0]) == 64 and nested == v.tolist()


def test_import_and_write_work_without_numpy(tmp_path):
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import ggufkit\n"
            f"ggufkit.write({{'tensors': [{{'name': 'w', 'type': 'f32', 'dims': [2, 3], 'values': [1, 2, 3, 4, 5, 6]}}]}}, {str(tmp_path / 'w.gguf')!r})\n"
            f"print(ggufkit.open({str(tmp_path / 'w.gguf')!r}).tensor_values('w'))\n"
            "print('numpy' in sys.modules and sys.modules['numpy'] is not None)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]\nFalse\n"


# ---- refusals --------------------------------------------------------------------------

def tensor(values, **fields):
    return {"metadata": [ARCH], "tensors": [{"name": "w", "values": values, **fields}]}


def meta(value, **fields):
    return {"metadata": [ARCH, {"key": "k", "value": value, **fields}]}


NO_TYPE = "has no GGUF type (float16, float32, float64, int8-int64, uint8-uint64, bool)"
NOT_CONTIGUOUS = "the numpy array is not contiguous (a slice with a step, or a transpose): give numpy.ascontiguousarray(x)"
ZERO_D = "a 0-d numpy array (a numpy scalar): give x.item() for one value, or an array of one dimension or more"
M = np.arange(16, dtype=np.float32).reshape(4, 4)

REFUSED = [
    ("complex", tensor(np.zeros(4, np.complex64)), f"tensors[0] w: a numpy array of complex64 {NO_TYPE}"),
    ("object", meta(np.array([1, "a"], dtype=object)), f"metadata[1] k: a numpy array of object {NO_TYPE}"),
    ("datetime", meta(np.array(["2024-01-01"], "datetime64[D]")), f"metadata[1] k: a numpy array of datetime64[D] {NO_TYPE}"),
    ("str", tensor(np.array(["a", "b"])), f"tensors[0] w: a numpy array of <U1 {NO_TYPE}"),
    ("longdouble", tensor(np.zeros(2, np.longdouble)), f"tensors[0] w: a numpy array of float128 {NO_TYPE}"),
    ("strided", tensor(M[:, ::2]), f"tensors[0] w: {NOT_CONTIGUOUS}"),
    ("transposed", tensor(M.T), f"tensors[0] w: {NOT_CONTIGUOUS}"),
    ("strided metadata", meta(np.arange(10, dtype=np.int32)[::2]), f"metadata[1] k: {NOT_CONTIGUOUS}"),
    ("0-d tensor", tensor(np.float32(1.5)), f"tensors[0] w: {ZERO_D}"),
    ("0-d metadata", meta(np.array(5)), f"metadata[1] k: {ZERO_D}"),
    ("5 dims", tensor(np.zeros((1, 1, 1, 2, 2), np.float32)), "tensors[0] w: a numpy array of shape (1, 1, 1, 2, 2) has 5 dims; ggml allows 4"),
    ("uint32 tensor", tensor(np.zeros(4, np.uint32)),
     "tensors[0] w: a numpy array of uint32 has no ggml type of its own (float16, float32, float64, int8-int64): give type (f32, bf16, q8_0, ...)"),
    ("bool tensor", tensor(np.zeros(4, bool)),
     "tensors[0] w: a numpy array of bool has no ggml type of its own (float16, float32, float64, int8-int64): give type (f32, bf16, q8_0, ...)"),
    ("dims", tensor(np.zeros(6, np.float32), dims=[4]), "tensors[0] w: dims [4] hold 4 elements; the numpy array has 6"),
    ("float16 metadata", meta(np.zeros(2, np.float16)),
     "metadata[1] k: a numpy array of float16 has no GGUF metadata type: give items (f32, f64), or x.astype(numpy.float32)"),
    ("2-d metadata", meta(np.zeros((2, 3), np.int32)), "metadata[1] k: a metadata array is flat, and this numpy array has shape (2, 3): give x.reshape(-1)"),
    ("scalar type", meta(np.array([7], np.uint32), type="u32"), "metadata[1] k: type u32 takes one value, not a numpy array: give type array, or x.item()"),
]


@pytest.mark.parametrize("sketch,message", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_what_has_no_gguf_type_or_layout_is_refused_naming_the_entry(tmp_path, sketch, message):
    out = tmp_path / "x.gguf"
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.write(sketch, out)
    assert (e.value.code, e.value.kind, str(e.value)) == ("usage", "usage", message)
    assert not out.exists() and len(os.listdir("/proc/self/fd")) == fds


def test_edit_refuses_an_array_that_is_no_list_of_values(spm_copy):
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(spm_copy, set={"x.m": np.zeros((2, 2), np.int32)}, dry_run=True)
    assert (e.value.code, str(e.value)) == ("usage", "set[x.m]: a numpy array of shape (2, 2) here: give a 1-d array (or a list)")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(spm_copy, set={"x.c": np.zeros(2, np.complex128)}, dry_run=True)
    assert str(e.value) == f"set[x.c]: a numpy array of complex128 {NO_TYPE}"


def test_dims_beside_an_array_must_be_ints_that_hold_its_elements_exactly(tmp_path):
    # A tensor's bytes are its dims' worth from the arrays' shared store: dims that are no
    # list of ints, or hold more elements, would take the next tensor's bytes.
    out = tmp_path / "d.gguf"
    b = {"name": "b", "values": np.ones(4, np.float32)}
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.write({"tensors": [{"name": "a", "values": np.zeros(4, np.float32), "dims": np.array([8])}, b]}, out)
    assert (e.value.code, str(e.value)) == ("usage", "tensors[0] a: dims array([8]): expected a list of ints (innermost first)")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.write({"tensors": [{"name": "a", "values": np.zeros(4, np.float32), "dims": [8]}, b]}, out)
    assert str(e.value) == "tensors[0] a: dims [8] hold 8 elements; the numpy array has 4"
    assert not out.exists()
    ggufkit.write({"tensors": [{"name": "a", "values": np.arange(4, dtype=np.float32), "dims": (np.int64(2), 2)}, b]}, out)
    f = ggufkit.open(out)
    assert f.tensor("a").dims == [2, 2] and f.tensor_values("a").tolist() == [[0, 1], [2, 3]]
    assert f.tensor_values("b").tolist() == [1, 1, 1, 1]


def test_an_array_interface_claiming_more_memory_than_it_exports_is_refused(tmp_path):
    # The memory is read through the buffer protocol, never through a pointer a foreign
    # object claims: a shape of 2**30 floats over 16 bytes is refused, not read.
    import ctypes
    backing = ctypes.create_string_buffer(16)

    class Claims:
        __array_interface__ = {"typestr": "<f4", "shape": (1 << 30,), "data": (ctypes.addressof(backing), False), "version": 3}

    for sketch, at in (({"metadata": [{"key": "x", "value": Claims()}]}, "metadata[0] x"),
                       ({"tensors": [{"name": "t", "values": Claims()}]}, "tensors[0] t")):
        with pytest.raises(ggufkit.Error) as e:
            ggufkit.write(sketch, tmp_path / "c.gguf")
        assert e.value.code == "usage" and str(e.value).startswith(at + ": the numpy array is not contiguous")
    assert not (tmp_path / "c.gguf").exists()
