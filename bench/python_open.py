"""One side of the Python bench (bench/python.sh): open MODEL and read every metadata value,
its type and every tensor record, then print a JSON line with the time that took in this
process and the memory it added: {"ms", "rss_before", "rss_peak", "values", "tensors"}.

  python3 bench/python_open.py ggufkit MODEL     (PYTHONPATH=build/python)
  python3 bench/python_open.py gguf-py MODEL     (PYTHONPATH=llama.cpp/gguf-py)
"""
import json
import resource
import sys
import time


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def with_ggufkit(path):
    import ggufkit
    before = rss_kib()
    t0 = time.perf_counter()
    f = ggufkit.open(path)
    values = [(k, f.types[k], v) for k, v in f.metadata.items()]
    tensors = [(t.name, t.dims, t.type, t.offset, t.nbytes) for t in f.tensors]
    return time.perf_counter() - t0, before, values, tensors


def with_gguf_py(path):
    import gguf
    before = rss_kib()
    t0 = time.perf_counter()
    r = gguf.GGUFReader(path)
    values = [(name, [int(t) for t in field.types], field.contents()) for name, field in r.fields.items()]
    tensors = [(t.name, [int(d) for d in t.shape], int(t.tensor_type), int(t.data_offset), int(t.n_bytes)) for t in r.tensors]
    return time.perf_counter() - t0, before, values, tensors


def main():
    side, path = sys.argv[1], sys.argv[2]
    seconds, before, values, tensors = (with_ggufkit if side == "ggufkit" else with_gguf_py)(path)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB, the process's high-water mark
    items = sum(len(v[2]) if isinstance(v[2], list) else 1 for v in values)
    print(json.dumps({"side": side, "ms": round(seconds * 1000, 1), "rss_before_kib": before, "rss_peak_kib": peak,
                      "keys": len(values), "items": items, "tensors": len(tensors)}))


main()
