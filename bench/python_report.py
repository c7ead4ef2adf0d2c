"""The Python bench's figures (bench/python.sh): the runs of each side, as JSON lines from
python_open.py, into the "Python" section of bench/RESULTS.md and a line of verdict.

  python3 bench/python_report.py HEADER_BYTES RESULTS.md GGUFKIT.jsonl GGUF_PY.jsonl LOAD
"""
import datetime
import json
import os
import re
import statistics
import sys

header, results, kfile, gfile, load = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]


def runs(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def figures(rs):
    ms = [r["ms"] for r in rs]
    beyond = max(r["rss_peak_kib"] - r["rss_before_kib"] for r in rs) * 1024 - header
    return statistics.median(ms), min(ms), max(ms), beyond / 2**20


k, g = runs(kfile), runs(gfile)
km, kmin, kmax, kb = figures(k)
gm, gmin, gmax, gb = figures(g)
ratio = km / gm
section = f"""<!-- python -->
## Python (issue 31)

`make bench-python` (bench/python.sh): the 4.7 GB fixture opened from Python and every
metadata value ({k[0]['items']:,} of them under {k[0]['keys']} keys), its type and every tensor
record ({k[0]['tensors']}) read, each run a process of its own, {len(k)} runs a side, the page cache
warm: `ggufkit.open` against llama.cpp's gguf-py (`GGUFReader`, then each field's
`contents()`), from the llama.cpp release node-llama-cpp carries. Times are in-process
(`time.perf_counter`, imports left out); memory is the peak RSS less the RSS before the open,
less the {header:,}-byte header. {datetime.date.today()}, {os.cpu_count()} cores, load average
{load} at the start (the machine's other work slows both sides).
Goal: at most 0.02x gguf-py's time and 64 MiB beyond the header; measured **{ratio:.4f}x**
and **{kb:.1f} MiB**.

| side | median ms | min to max ms | beyond the header MiB |
|---|---:|---:|---:|
| ggufkit.open, metadata.items(), types, tensors | {km:.1f} | {kmin} to {kmax} | {kb:.1f} |
| gguf-py GGUFReader, contents() of every field, tensors | {gm:.1f} | {gmin} to {gmax} | {gb:.1f} |
<!-- /python -->"""
text = open(results).read() if os.path.exists(results) else ""
if "<!-- python -->" in text:
    text = re.sub(r"<!-- python -->.*?<!-- /python -->", lambda m: section, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + section + "\n"
with open(results, "w") as f:
    f.write(text)
print(section)
print(f"ratio {ratio:.4f}x (target at most 0.02x); beyond the header {kb:.1f} MiB (target at most 64); wrote {results}")
