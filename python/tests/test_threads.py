"""Calls on several threads at once: each keeps its own notes, and threads editing one file
exclude each other as processes do (no edit that returned is lost). And values that would
take the writer minutes (a list aliasing itself 40 deep) are refused at once."""
import shutil
import threading

import pytest

import ggufkit
from conftest import TINY


@pytest.mark.parametrize("n_threads,rounds,write", [(8, 20, False), (2, 200, True)])
def test_edits_of_their_own_files_on_several_threads_each_report_their_own_note(tmp_path, n_threads, rounds, write):
    # Each call retypes its own byte token to the type it has: one note, naming that token.
    # The GIL is let go of during a call, so the threads' edits run at once. With `write`,
    # each round also sets general.round in place: the first adds the key (a whole-file
    # write), each later one rewrites its header alone.
    files = []
    for t in range(n_threads):
        p = tmp_path / f"m{t}.gguf"
        shutil.copyfile(TINY, p)
        files.append(p)
    got = [[] for _ in files]
    written = [[] for _ in files]
    failed = []

    def work(t):
        token = f"<0x{0x41 + t:02X}>"
        try:
            for n in range(rounds):
                patch = {"token_types": {token: "byte"}}
                if write:
                    patch["set"] = {"general.round": {"type": "u32", "value": n}}
                r = ggufkit.edit(files[t], patch=patch, dry_run=not write, in_place=write)
                got[t].append([msg for _, msg in r["notes"]])
                written[t].append(r["written"])
        except BaseException as e:  # noqa: BLE001 -- reported below
            failed.append(repr(e))

    workers = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in workers:
        th.start()
    for th in workers:
        th.join()
    assert failed == []
    for t in range(n_threads):
        token = f"<0x{0x41 + t:02X}>"
        assert len(got[t]) == rounds
        assert all(len(n) == 1 and f'"{token}"' in n[0] and "is already byte" in n[0] for n in got[t]), got[t][:3]
        if write:
            assert written[t] == ["whole_file"] + ["header"] * (rounds - 1)
            assert ggufkit.open(files[t]).metadata["general.round"] == rounds - 1
        else:
            assert written[t] == ["nothing"] * rounds


def test_nine_threads_editing_one_file_in_place_each_set_their_own_key_and_none_is_lost(tmp_path):
    # An edit that finds the file changed since it read it (a whole-file rewrite lets go of
    # the lock while it copies) says so and is made again; every edit ends in the file.
    for round in range(3):
        model = tmp_path / f"one-{round}.gguf"
        shutil.copyfile(TINY, model)
        errors = [[] for _ in range(9)]

        def work(t):
            for _ in range(10):
                try:
                    # typed: an untyped key close to another's new one would be refused as its misspelling
                    ggufkit.edit(model, patch={"set": {f"general.thread{t}": {"type": "u32", "value": 100 + t}}}, in_place=True)
                    return
                except ggufkit.Error as e:
                    errors[t].append(str(e))
                    if "changed since it was read" not in str(e):
                        return

        threads = [threading.Thread(target=work, args=(t,)) for t in range(9)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        md = ggufkit.open(model).metadata
        for t in range(9):
            assert md.get(f"general.thread{t}") == 100 + t, (round, t, errors[t])
            assert len(errors[t]) <= 8, errors[t]


def test_a_list_aliasing_itself_forty_deep_is_refused_at_once_and_a_few_repeats_are_written(tmp_path):
    a = [1]
    for _ in range(40):
        a = [a, a]
    sketch = {"version": 3, "metadata": [{"key": "general.architecture", "type": "string", "value": "llama"},
                                         {"key": "x.nested", "type": "array", "items": "array", "value": a}]}
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.write(sketch, tmp_path / "a.gguf")
    assert e.value.kind == "usage"
    assert "makes more than 64 MiB of repeated text" in str(e.value)
    assert list(tmp_path.iterdir()) == []
    # The same small list many times over is no attack: written as given.
    pair = {"items": "u8", "value": [1, 2]}
    sketch["metadata"][1]["value"] = [pair] * 1000
    ggufkit.write(sketch, tmp_path / "b.gguf")
    assert ggufkit.open(tmp_path / "b.gguf").metadata["x.nested"] == [[1, 2]] * 1000


def test_a_sparse_replica_reports_its_total_last(tmp_path):
    seen = []
    r = ggufkit.replica(TINY, tmp_path / "r.gguf", data="sparse", progress=lambda w, t: seen.append((w, t)))
    size = r["files"][0]["file_size"]
    assert seen and seen[-1] == (size, size)
    assert all(w <= t == size for w, t in seen)
