// The JavaScript side of ggufkit's interop tests, run by tests/interop/test_interop.cpp
// from the folder where the pinned npm packages are installed.
//
//   node interop.mjs hf-read FILE        @huggingface/gguf's view of a file, as JSON
//   node interop.mjs hf-verdict FILE     whether it reads the file: {"ok": true} or {"ok": false, "error": "..."}
//   node interop.mjs hf-build OUT        write a header with serializeGgufMetadata; print its metadata
//   node interop.mjs llama-run FILE      load with llama.cpp (node-llama-cpp), generate 8 tokens greedily
//   node interop.mjs llama-tokenize FILE  llama.cpp's tokens of a few texts (-vocab: loaded with vocab_only)
import { writeFile } from "node:fs/promises";

// Every number as text, so 64-bit integers and float bit patterns survive JSON.
function text(x) {
  if (typeof x === "bigint") return x.toString();
  if (typeof x === "number") {
    if (Number.isNaN(x)) return "nan";
    if (x === Infinity) return "inf";
    if (x === -Infinity) return "-inf";
    if (Object.is(x, -0)) return "-0";
    return String(x);
  }
  if (Array.isArray(x)) return x.map(text);
  return x;  // strings and booleans
}

function metadataList(typed) {
  const out = [];
  for (const [key, tv] of Object.entries(typed)) {
    if (key === "version" || key === "tensor_count" || key === "kv_count") continue;
    out.push({ key, type: tv.type, subType: tv.subType ?? null, value: text(tv.value) });
  }
  return out;
}

const [cmd, file] = process.argv.slice(2);
if (cmd === "hf-read") {
  const { gguf } = await import("@huggingface/gguf");
  const r = await gguf(file, { allowLocalFile: true, typedMetadata: true });
  console.log(JSON.stringify({
    version: r.metadata.version,
    littleEndian: r.littleEndian,
    tensorDataOffset: r.tensorDataOffset.toString(),
    metadata: metadataList(r.typedMetadata),
    tensors: r.tensorInfos.map((t) => ({ name: t.name, shape: t.shape.map(String), dtype: t.dtype, offset: t.offset.toString() })),
  }));
} else if (cmd === "hf-verdict") {
  const { gguf } = await import("@huggingface/gguf");
  try {
    const r = await gguf(file, { allowLocalFile: true, typedMetadata: true });
    console.log(JSON.stringify({ ok: true, tensors: r.tensorInfos.length }));
  } catch (e) {
    console.log(JSON.stringify({ ok: false, error: String(e?.message ?? e) }));
  }
} else if (cmd === "hf-build") {
  const { serializeGgufMetadata, GGUFValueType: T } = await import("@huggingface/gguf");
  const entries = {
    "general.architecture": { value: "llama", type: T.STRING },
    "general.name": { value: "built by @huggingface/gguf — ünïcödé", type: T.STRING },
    "test.u8": { value: 255, type: T.UINT8 },
    "test.i8": { value: -128, type: T.INT8 },
    "test.u16": { value: 65535, type: T.UINT16 },
    "test.i16": { value: -32768, type: T.INT16 },
    "test.u32": { value: 4294967295, type: T.UINT32 },
    "test.i32": { value: -2147483648, type: T.INT32 },
    "test.u64": { value: 18446744073709551615n, type: T.UINT64 },
    "test.i64": { value: -9223372036854775808n, type: T.INT64 },
    "test.f32": { value: 0.5, type: T.FLOAT32 },
    "test.f64": { value: -1.25e-300, type: T.FLOAT64 },
    "test.bool": { value: true, type: T.BOOL },
    "test.strings": { value: ["a", "", "ccc"], type: T.ARRAY, subType: T.STRING },
    "test.u32s": { value: [1, 2, 3], type: T.ARRAY, subType: T.UINT32 },
    "test.f32s": { value: [1.5, -2.5], type: T.ARRAY, subType: T.FLOAT32 },
  };
  const typed = {
    version: { value: 3, type: T.UINT32 },
    tensor_count: { value: 0n, type: T.UINT64 },
    kv_count: { value: BigInt(Object.keys(entries).length), type: T.UINT64 },
    ...entries,
  };
  const bytes = serializeGgufMetadata(typed, { littleEndian: true, alignment: 32 });
  await writeFile(file, bytes);
  console.log(JSON.stringify({ version: 3, metadata: metadataList(entries) }));
} else if (cmd === "llama-run") {
  const { getLlama } = await import("node-llama-cpp");
  const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
  const model = await llama.loadModel({ modelPath: file });
  const context = await model.createContext({ contextSize: 128 });
  const sequence = context.getSequence();
  const tokens = [];
  for await (const t of sequence.evaluate(model.tokenize("Once upon a time"), { temperature: 0 })) {
    tokens.push(t);
    if (tokens.length >= 8) break;
  }
  const md = model.fileInfo.metadata;
  console.log(JSON.stringify({
    tokens,
    eos: model.tokens.eos,
    chat_template: md?.tokenizer?.chat_template ?? null,
    name: md?.general?.name ?? null,
    alignment: md?.general?.alignment ?? null,
  }));
  await context.dispose();
  await model.dispose();
} else if (cmd === "llama-tokenize" || cmd === "llama-tokenize-vocab") {
  // llama.cpp's tokenizer over texts that reach its every path (spaces, digits, unicode,
  // special tokens parsed and not), the model loaded whole or with vocab_only.
  const { getLlama } = await import("node-llama-cpp");
  const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
  const model = await llama.loadModel({ modelPath: file, vocabOnly: cmd === "llama-tokenize-vocab" });
  const texts = ["Once upon a time", " Hello  world\n\tof 12345 tokens", "ünïcödé 日本語 🙂", "<s>[INST] hi [/INST]</s>", ""];
  console.log(JSON.stringify({
    n_tokens: model.tokens.count ?? null,
    bos: model.tokens.bos, eos: model.tokens.eos,
    plain: texts.map((t) => model.tokenize(t, false)),
    special: texts.map((t) => model.tokenize(t, true)),
  }));
  await model.dispose();
} else {
  console.error("usage: interop.mjs hf-read FILE | hf-verdict FILE | hf-build OUT | llama-run FILE | llama-tokenize[-vocab] FILE");
  process.exit(2);
}
