"""ggufkit: read, check, write and safely edit GGUF files (llama.cpp's model format).

  f = ggufkit.open('model.gguf')          # a shard opens its whole set
  f.metadata['general.architecture']      # values made from the header as asked for
  f.tensors[0].name, f.tensors[0].type    # 'token_embd.weight', 'q4_K'
  ggufkit.edit('model.gguf', set={'tokenizer.ggml.eos_token_id': 2}, in_place=True)

Errors in a file are ggufkit.Error (a ValueError) with .file, .offset, .field, .code and
the message the command line prints; what the system refuses (a missing file, a folder, no
permission) is Python's own OSError subclass with .filename. Every write goes through the
library's safe output path: a file is replaced whole or not at all, a header edited in
place under a journal. `python -m ggufkit` runs the command line.
"""
from ._ggufkit import *  # noqa: F401,F403  (the functions and classes the extension defines)
from ._ggufkit import __version__

# The classes say they are ggufkit's (their repr, help() and pickling name the package).
from . import _ggufkit

for _name in dir(_ggufkit):
    _obj = getattr(_ggufkit, _name)
    if isinstance(_obj, type) and getattr(_obj, "__module__", None) == "ggufkit._ggufkit":
        try:
            _obj.__module__ = "ggufkit"
        except (AttributeError, TypeError):
            pass
del _name, _obj
