#!/usr/bin/env python3
"""Times Python's jinja2, set up as transformers sets it up, on the renders bench_render
times: per template, the median of 21 compiles (env.from_string) and, over the
conversations, the worst median of 21 renders. Prints TSV: template, compile ms,
render ms, both ms.   render_peer.py TEMPLATES_DIR CONVERSATIONS_DIR"""
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "template"))
from hf_env import environment, render_kwargs  # noqa: E402

env = environment(1795000000)


def median_ms(f):
    t = []
    for _ in range(21):
        a = time.perf_counter()
        f()
        t.append((time.perf_counter() - a) * 1000)
    return statistics.median(t)


def main():
    tdir, cdir = sys.argv[1], sys.argv[2]
    convs = []
    for name in sorted(os.listdir(cdir)):
        if name.endswith(".json"):
            with open(os.path.join(cdir, name), encoding="utf-8") as f:
                convs.append(render_kwargs(json.load(f), "<s>", "</s>"))
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".jinja"):
            continue
        with open(os.path.join(tdir, name), encoding="utf-8", newline="") as f:
            source = f.read()
        compile_ms = median_ms(lambda: env.from_string(source))
        template = env.from_string(source)

        def render(c):
            try:
                template.render(**c)
            except Exception:  # noqa: BLE001 - a template that refuses: timed to its refusal
                pass

        worst = max(median_ms(lambda: render(c)) for c in convs)
        print(f"{name[:-6]}\t{compile_ms:.3f}\t{worst:.3f}\t{compile_ms + worst:.3f}")


main()
