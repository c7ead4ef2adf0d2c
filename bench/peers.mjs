// Header readers of other projects, timed inside node so that node's own start-up is
// not counted: node bench/peers.mjs (nlc|hf) FILE, run from the npm folder.
const [which, file] = process.argv.slice(2);
let parse;
if (which === "nlc") {
  const { readGgufFileInfo } = await import("node-llama-cpp");
  parse = () => readGgufFileInfo(file, { readTensorInfo: true });
} else {
  const { gguf } = await import("@huggingface/gguf");
  parse = () => gguf(file, { allowLocalFile: true });
}
const t0 = performance.now();
const r = await parse();
const ms = performance.now() - t0;
const tensors = which === "nlc" ? r.fullTensorInfo?.length ?? r.tensorInfo?.length : r.tensorInfos.length;
console.log(JSON.stringify({ ms, tensors }));
