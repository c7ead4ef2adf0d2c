"""ggufkit: read, check, write and safely edit GGUF files (llama.cpp's model format)."""
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, Optional, Sequence, TypedDict, Union

__version__: str

PathLike = Union[str, bytes, os.PathLike[str], os.PathLike[bytes]]
# int, float, bool, str, bytes (a string that is not UTF-8), or a list of them (nested).
MetaValue = Union[int, float, bool, str, bytes, list["MetaValue"]]

class Error(ValueError):
    """What ggufkit refuses, and where."""
    file: Optional[str]
    offset: Optional[int]        # the byte offset in the file, when there is one
    field: str                   # "kv[4] tokenizer.ggml.tokens (value)", "tensor[2] x (offset)"
    code: str                    # the refusing rule ("token_id"), else the kind
    kind: Literal["format", "usage", "io"]
    exit_code: int               # what the command line exits with: 1, 2, 3
    message: str                 # without the file and offset
    findings: list["Finding"]    # a refused edit's

class Tensor:
    name: str
    dims: list[int]              # innermost first, as ggml orders them
    type: str                    # ggml's name: "f32", "q8_0", "q4_K", ...
    offset: int                  # from the data start (a set: of its own shard)
    nbytes: int
    shard: Optional[int]         # a set's: the tensor's shard, from 1

class Span:
    kind: str                    # magic, version, kv_key, kv_type, kv_value, tensor_info, padding, tensor_data, ...
    offset: int
    size: int
    end: int
    field: str                   # "kv[7] tokenizer.chat_template", "tensor[0] token_embd.weight"

class Finding:
    file: str
    code: str                    # as validate prints it: "token_id", "template_syntax", ...
    severity: Literal["error", "warning", "info"]
    offset: Optional[int]
    field: str                   # the key or tensor it is about ("" for the file)
    item: str
    message: str
    fix: str                     # a command that fixes it, or ""
    ids: list[int]

class KeyMap(Mapping[str, Any]):
    """A read-only mapping of the file's keys in file order; values made as asked for. A key
    that is not UTF-8 is a str with surrogate escapes (as os.fsdecode makes them), which
    looks it up again."""
    def __getitem__(self, key: str) -> Any: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[str]: ...
    def offset(self, key: str) -> Optional[int]:
        """Where the pair starts in the file (its key's length field)."""
    def value_offset(self, key: str) -> Optional[int]:
        """Where the pair's value starts in the file."""

class File:
    path: str
    version: int
    byte_order: Literal["little", "big"]
    alignment: int
    data_offset: int
    file_size: int               # a set: every shard's, added up
    files: int                   # the files of its shard set (1 for a lone file)
    header_only: bool            # a header exemplar: no tensor bytes
    metadata: KeyMap             # key -> MetaValue
    types: KeyMap                # key -> "u32", "string", "array[string]", ...
    tensors: list[Tensor]
    closed: bool
    def tensor(self, name: str) -> Tensor: ...
    def tensor_bytes(self, name: str) -> memoryview:
        """The tensor's bytes as stored: a read-only view of the mapped file, no copy."""
    def tensor_values(self, name: str) -> Any:
        """Decoded to float32, shaped outermost first (ggml's dims reversed, as gguf-py's tensor.data):
        a numpy ndarray when numpy imports, else nested lists of that shape."""
    def validate(self, base: Optional[PathLike] = None, *, dialect: Literal["llama.cpp", "ik_llama"] = "llama.cpp") -> list[Finding]: ...
    def map(self) -> list[Span]: ...
    def tokenize(self, text: Union[str, bytes], add_special: bool = True, parse_special: bool = True) -> list[int]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "File": ...
    def __exit__(self, *args: object) -> None: ...

def open(path: PathLike, shard_only: bool = False) -> File:
    """Open a GGUF file, or any shard of a set (the whole set)."""

class Change(TypedDict, total=False):
    change: Literal["set", "add", "remove", "rename", "alignment", "retype"]
    key: str
    to: str
    before: Any
    after: Any
    token: str
    id: int

# One tensor an edit removed, renamed, sliced, added or replaced ("from": a graft's donor file).
TensorChange = TypedDict("TensorChange", {
    "change": Literal["removed", "renamed", "sliced", "added", "replaced"], "tensor": str, "to": str,
    "dims_before": tuple[int, ...], "dims_after": tuple[int, ...], "from": str}, total=False)

class WrittenFile(TypedDict):
    path: str
    file_size: int
    data_offset: int
    tensors: int
    keys: int
    tensors_verified: int
    bytes_verified: int

class EditReport(TypedDict, total=False):
    file: str
    dry_run: bool
    unchanged: bool
    written: Literal["nothing", "header", "whole_file"]
    changes: list[Change]
    data_offset: tuple[int, int]      # before, after
    file_size: tuple[int, int]
    header_fits: bool
    header_size: int                  # written == "header"
    bytes_written: int
    at: int
    why_whole: str
    files: list[WrittenFile]
    findings: list[Finding]           # warnings the edit brings in
    notes: list[tuple[str, str]]
    tensor_changes: list[TensorChange]

def edit(path: PathLike, *, set: Optional[Mapping[str, Any]] = None, remove: Union[None, str, Sequence[str]] = None,
         rename: Optional[Mapping[str, str]] = None, chat_template: Optional[str] = None,
         special_tokens: Optional[Mapping[str, Union[str, int]]] = None, patch: Union[None, PathLike, Mapping[str, Any]] = None,
         out: Optional[PathLike] = None, in_place: bool = False, dry_run: bool = False, force: bool = False,
         allow_broken: bool = False, header_only: bool = False, whole_file: bool = False, verify: bool = True,
         progress: Optional[Callable[[int, int], None]] = None, break_link: bool = False,
         remove_tensors: Union[None, str, Sequence[str]] = None, rename_tensors: Optional[Mapping[str, str]] = None,
         keep_tensors: Union[None, str, Sequence[str]] = None, keep_layers: Union[None, str, int, Sequence[int]] = None,
         remove_layers: Union[None, str, int, Sequence[int]] = None, keep_experts: Union[None, str, int, Sequence[int]] = None,
         remove_experts: Union[None, str, int, Sequence[int]] = None,
         graft: Union[None, PathLike, tuple[PathLike, str], Sequence[Union[PathLike, tuple[PathLike, str]]]] = None,
         max_tensors: int = 0, max_bytes: int = 0) -> EditReport: ...

class WriteReport(WrittenFile):
    findings: list[Finding]

def write(sketch: Union[PathLike, Mapping[str, Any]], out: PathLike, *, force: bool = False, check: bool = False,
          defines: Optional[Mapping[str, str]] = None) -> WriteReport:
    """`ggufkit write`: a sketch (a file, or a dict in the JSON sketch format) to a GGUF file. A tensor's
    `values` and a metadata array's `value` may be numpy arrays: the dtype gives `type`/`items` and the
    shape (reversed) gives `dims`, unless the entry gives them."""
def dump(path: PathLike, *, inline_data: bool = False) -> dict[str, Any]: ...
def validate(path: PathLike, *, shard_only: bool = False, base: Optional[PathLike] = None,
             dialect: Literal["llama.cpp", "ik_llama"] = "llama.cpp") -> list[Finding]: ...
def render(path: PathLike, conversation: Mapping[str, Any], *, name: str = "default", shard_only: bool = False,
           add_generation_prompt: Optional[bool] = None) -> str: ...
def tokenize(path: PathLike, text: Union[str, bytes], *, add_special: bool = True, parse_special: bool = True) -> list[int]: ...
def replica(path: PathLike, out: PathLike, *, data: Literal["sparse", "zeros", "none"] = "sparse", force: bool = False,
            shard_only: bool = False, progress: Optional[Callable[[int, int], None]] = None) -> dict[str, Any]: ...
def extract_vocab(path: PathLike, out: PathLike, *, force: bool = False) -> dict[str, Any]: ...
def corrupt(path: PathLike, dir: PathLike, *, seed: int = 1, count: Optional[int] = None, force: bool = False) -> list[dict[str, Any]]: ...

# ---- the command's other jobs: each returns what the command prints with --json ----------

class SplitFile(TypedDict):
    file: str
    tensors: int
    file_size: int
    tensors_verified: int

class FilesReport(TypedDict):
    files: list[SplitFile]

def split(path: PathLike, prefix: PathLike, *, max_tensors: Optional[int] = None, max_size: Optional[int] = None,
          metadata_only_first: bool = False, verify: bool = True, force: bool = False,
          progress: Optional[Callable[[int, int], None]] = None) -> FilesReport:
    """`ggufkit split`: the model as PREFIX-00001-of-0000N.gguf, ... (gguf-split's convention), a new
    shard every max_tensors tensors or before its tensor bytes pass max_size bytes (give one)."""
def merge(path: PathLike, out: PathLike, *, verify: bool = True, force: bool = False,
          progress: Optional[Callable[[int, int], None]] = None) -> FilesReport:
    """`ggufkit merge`: a shard set (any of its shards) as one file, without the split.* keys."""

class BeforeAfter(TypedDict):
    before: int
    after: int

class RewriteChange(TypedDict, total=False):
    change: Literal["set", "add", "remove", "rename", "alignment", "retype"]
    key: str
    to: str
    before: str                  # the value as the command shows it
    after: str

class RewriteReport(TypedDict, total=False):
    """`realign --json` / `convert --json`: which keys appear depends on what was done."""
    file: str
    changes: list[RewriteChange]
    written: Union[bool, Literal["header"]]   # False: nothing to change
    dry_run: bool
    data_offset: Union[int, BeforeAfter]      # a dry run's: before and after
    file_size: Union[int, BeforeAfter]
    tensors_verified: int
    bytes_verified: int
    header_bytes: int
    bytes_written: int
    at: int
    set_files: int
    files: list[WrittenFile]

def realign(path: PathLike, alignment: Union[int, str], out: Optional[PathLike] = None, *, in_place: bool = False,
            dry_run: bool = False, force: bool = False, allow_broken: bool = False, verify: bool = True,
            break_link: bool = False, progress: Optional[Callable[[int, int], None]] = None) -> RewriteReport:
    """`ggufkit realign`: re-lay the data at alignment N (a power of two; 'default': 32, no key)."""
def convert(path: PathLike, byte_order: Literal["big", "little"], out: Optional[PathLike] = None, *, in_place: bool = False,
            dry_run: bool = False, force: bool = False, allow_broken: bool = False, verify: bool = True,
            break_link: bool = False, progress: Optional[Callable[[int, int], None]] = None) -> RewriteReport:
    """`ggufkit convert`: the same model in the other byte order (as gguf_convert_endian.py writes it)."""

def hash(path: PathLike, *, algo: Union[None, str, Sequence[str]] = None, file: bool = False, tensors: bool = False,
         manifest: bool = False, check: Optional[PathLike] = None, shard_only: bool = False,
         progress: Optional[Callable[[int, int], None]] = None) -> dict[str, Any]:
    """`ggufkit hash --json`: {'algo', 'all', 'tensors': [{'name', ALGO: hex}]} (algo 'xxh64', 'sha1',
    'sha256'); file=True: {'files': [{'file', 'bytes', 'sha256'}]} (tensors=True: both);
    manifest=True: {'lines': [{'algo', 'hash', 'name'}]} as llama-gguf-hash writes them (algo: a list,
    or 'all'); check=MANIFEST: {'manifest', 'present', 'ok', 'other_lines', 'lines': [...]}."""

Difference = TypedDict("Difference", {"change": str, "key": str, "type": str, "a": Any, "b": Any}, total=False)

class DiffReport(TypedDict):
    same: bool
    a_files: int
    b_files: int
    differences: list[Difference]

def diff(a: PathLike, b: PathLike, *, shard_only: bool = False, exit_code: bool = False) -> DiffReport:
    """`ggufkit diff --json`: everything by which b differs from a; exit_code=True raises
    ggufkit.Error (code 'differ', exit_code 1, with .differences) when they differ."""

class DetokenizeReport(TypedDict):
    text: str                    # bytes that are not UTF-8 as surrogate escapes

def detokenize(path: PathLike, ids: Sequence[int], *, remove_special: bool = False, unparse_special: bool = True,
               shard_only: bool = False) -> DetokenizeReport:
    """`ggufkit detokenize --json`: the text the ids stand for, as llama_detokenize gives it."""

class RecoverReport(TypedDict):
    file: str
    recovery: Literal["none", "rolled_back", "kept_new", "set_finished", "discarded"]

def recover(path: PathLike, *, discard: bool = False) -> RecoverReport:
    """`ggufkit recover`: finish an in-place edit a crash cut short (its journal beside the file)."""
