#!/usr/bin/env python3
"""The oracle for ggufkit's template renderer: Python's jinja2 as transformers sets it up
(hf_env.py), rendering every template given with every conversation given.

Reads a job as JSON on standard input:
  {"templates": [PATH...], "conversations": [PATH...], "bos_token": S, "eos_token": S,
   "now": SECONDS}
and prints a JSON list, one entry per template and conversation, in that order:
  {"ok": true, "text": PROMPT} or {"ok": false, "error": "KIND: MESSAGE"}."""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_env import environment, render_kwargs  # noqa: E402


def main():
    job = json.load(sys.stdin)
    env = environment(job["now"])
    out = []
    for path in job["templates"]:
        with open(path, encoding="utf-8", newline="") as f:
            source = f.read()
        try:
            template, error = env.from_string(source), None
        except Exception as e:  # noqa: BLE001 - every failure is an answer
            template, error = None, f"{type(e).__name__}: {e}"
        for conv_path in job["conversations"]:
            if template is None:
                out.append({"ok": False, "error": error})
                continue
            with open(conv_path, encoding="utf-8") as f:
                conv = json.load(f)
            try:
                out.append({"ok": True, "text": template.render(**render_kwargs(conv, job["bos_token"], job["eos_token"]))})
            except Exception as e:  # noqa: BLE001
                out.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    json.dump(out, sys.stdout, ensure_ascii=False)


main()
