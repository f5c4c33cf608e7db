"""Window queries on the store select exactly what a pandas mask selects on a direct load."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

from dflash_postmortem import schema
from dflash_postmortem.config import read_config
from dflash_postmortem.errors import UsageError
from dflash_postmortem.store import layout, views, window
from dflash_postmortem.store.ingest import ingest
from dflash_postmortem.store.load import load_incident
from dflash_postmortem.store.manifest import Manifest
from dflash_postmortem.store.window import parse_window, window_parts

from .conftest import SMALL_CHUNKS, assert_same_frames

START, END = pd.Timestamp("2026-11-30 05:21:00", tz="UTC"), pd.Timestamp("2026-11-30 05:23:30", tz="UTC")


def _mask(frame: str, df: pd.DataFrame, hosts, gpus) -> pd.DataFrame:
    if frame == "processes":
        keep = (df["first_seen"] < END) & (df["last_seen"] >= START)
    else:
        keep = (df["time"] >= START) & (df["time"] < END)
    if hosts is not None and "host" in df.columns:
        keep &= df["host"].isin(hosts)
    if gpus is not None and "gpu" in df.columns:
        keep &= df["gpu"].isin(gpus)
    return df[keep.fillna(False).astype(bool)].reset_index(drop=True)


@pytest.mark.parametrize(("hosts", "gpus", "threads"), [(None, None, False), (["h02"], [1], False), (None, None, True)],
                         ids=["all", "h02-gpu1", "all-take-in-threads"])
def test_window_selects_what_a_mask_selects(shared_folder, direct, hosts, gpus, threads, monkeypatch):
    if threads:  # the column-per-thread take a fleet's window of millions of rows gets
        monkeypatch.setattr(window, "_PARALLEL_TAKE_ROWS", 0)
    # The first window converts the folder into its default store, the second finds it up to date.
    windowed = load_incident(shared_folder, window=(START, END), hosts=hosts, gpus=gpus)
    assert (shared_folder / ".dflash-store" / "manifest.json").is_file()
    for frame in schema.FRAME_NAMES:
        expected = _mask(frame, direct.frames()[frame], hosts, gpus)
        assert_same_frames(expected, windowed.frames()[frame], frame)
    assert len(windowed.gpus) > 100 and len(windowed.metrics) > 100
    if gpus is not None:
        assert set(windowed.gpus["gpu"]) == {1} and set(windowed.gpus["host"]) == {"h02"}
    # the load report is the whole folder's, as a direct load's
    pd.testing.assert_frame_equal(windowed.load_report.to_frame(), direct.load_report.to_frame())


def test_a_window_that_ends_before_it_starts_is_refused(fleet_folder):
    with pytest.raises(UsageError, match="ends"):
        load_incident(fleet_folder, window=(END, START))
    assert not (fleet_folder / ".dflash-store").exists()  # refused before anything is converted


def test_only_the_parts_that_can_hold_the_window_are_read():
    files = [f"s/{frame}/host={h}/day={d}/part-1-00000.parquet"
             for frame in ("gpus", "processes") for h in ("h01", "h%2F2")
             for d in ("2026-11-29", "2026-11-30", "2026-12-01", "__HIVE_DEFAULT_PARTITION__")]
    files += [f"s/metrics/day={d}/part-1-00000.parquet" for d in ("2026-11-30", "__HIVE_DEFAULT_PARTITION__")]
    span = parse_window((START, END))

    def kept(frame, hosts):
        return window_parts(frame, [f for f in files if f"/{frame}/" in f], span, hosts)

    assert kept("gpus", ["h/2"]) == ["s/gpus/host=h%2F2/day=2026-11-30/part-1-00000.parquet"]
    # a process first seen on an earlier day, or never, may still be running in the window
    assert kept("processes", ["h01"]) == [f"s/processes/host=h01/day={d}/part-1-00000.parquet"
                                          for d in ("2026-11-29", "2026-11-30", "__HIVE_DEFAULT_PARTITION__")]
    assert kept("metrics", ["h01"]) == ["s/metrics/day=2026-11-30/part-1-00000.parquet"]  # no host folders
    assert window_parts("gpus", files, None, None) == files


def test_parts_outside_the_window_are_skipped_by_their_time_span(shared_folder, direct, tmp_path, monkeypatch):
    # In small chunks every stream is many parts of one day; the manifest keeps each part's time
    # span, and a window hands DuckDB only the parts that overlap it, with the same rows.
    store = str(tmp_path / "store")
    ingest(shared_folder, store, workers=1, chunk_bytes=SMALL_CHUNKS)
    manifest = Manifest.read(*layout.filesystem(store))
    entry = manifest.sources["h01/smi_stream.csv"]
    gpu_parts = [p for p in entry.parts if p.startswith("gpus/")]
    assert len(gpu_parts) > 3 and set(entry.spans) == set(entry.parts)
    first, last = entry.spans[gpu_parts[0]], entry.spans[gpu_parts[-1]]
    assert first[0] <= first[1] < last[0] <= last[1]  # chunks in time order, each its own span
    scanned, sql = [], {}

    def scan(frame, files, *args):
        scanned.extend(files)
        sql[frame] = views.scan(frame, files, *args)
        return sql[frame]

    monkeypatch.setattr(window, "scan", scan)
    cfg = read_config(shared_folder / "incident.toml")
    windowed = window.load_window(store, window=(START, END), root=shared_folder, config=cfg)
    read = [f for f in scanned if "/gpus/" in f and layout.part_stem("h01/smi_stream.csv") in f]
    assert 0 < len(read) < len(gpu_parts)
    # every part's columns are known: alike parts in one plain scan each, the groups joined by name
    # (nvidia-smi's and dmon's GPU columns differ), never DuckDB's union by name over every part
    assert all("union_by_name = true" not in q for q in sql.values())
    assert "UNION ALL BY NAME" in sql["gpus"]
    for frame in schema.FRAME_NAMES:
        assert_same_frames(_mask(frame, direct.frames()[frame], None, None), windowed.frames()[frame], frame)


def test_row_groups_hold_one_clock_hour_so_a_window_skips_the_others(tmp_path):
    # 3 hosts of 2 GPUs for 2.5 hours, their ranks' logs too: each row group of every part holds one
    # clock hour, so an hour's window decodes that hour's row groups only; it returns what a
    # direct load's mask does.
    from .test_fleet import generate

    out = tmp_path / "fleet"
    truth = generate(out, "--hosts", "3", "--gpus-per-host", "2", "--hours", "2.5", "--seed", "3", "--no-prometheus")
    store = tmp_path / "store"
    ingest(out, str(store), workers=1)
    checked = 0
    for part in store.rglob("*.parquet"):
        md = pq.ParquetFile(part).metadata
        col = md.schema.to_arrow_schema().names.index("time") if "/processes/" not in str(part) else None
        if col is None or md.num_rows < 1000:
            continue
        spans = [(md.row_group(g).column(col).statistics.min, md.row_group(g).column(col).statistics.max)
                 for g in range(md.num_row_groups)]
        # each row group one clock hour (the GPUs of one sample may lie a millisecond either side)
        assert all(hi - lo < pd.Timedelta(hours=1, seconds=1) for lo, hi in spans), part
        assert md.num_row_groups >= 2 and spans[0][1] < spans[1][0], part
        checked += 1
    assert checked >= 9  # the GPU stream's parts and every rank's log
    start = pd.Timestamp(truth["start"]) + pd.Timedelta(hours=1)
    hour = (start, start + pd.Timedelta(hours=1))
    windowed = window.load_window(str(store), window=hour, config=read_config(out / "incident.toml"), root=out)
    direct = load_incident(out)
    for frame in ("gpus", "metrics"):
        df = direct.frames()[frame]
        expected = df[(df["time"] >= hour[0]) & (df["time"] < hour[1])].reset_index(drop=True)
        assert_same_frames(expected, windowed.frames()[frame], frame)
    assert len(windowed.gpus) == 3 * 2 * 3600


def test_a_window_after_a_file_changed_reads_the_new_parts_not_cached_footers(fleet_folder, copy_store):
    # Windows share one DuckDB database and its cache of Parquet footers (keyed by path and a
    # modification time in whole seconds): a source converted again writes parts under new names,
    # so a window right after reads the new rows, never a stale footer.
    cfg = read_config(fleet_folder / "incident.toml")
    before = window.load_window(str(copy_store), root=fleet_folder, config=cfg)
    old_parts = set(Manifest.read(*layout.filesystem(str(copy_store))).sources["train_opt.log"].parts)
    with open(fleet_folder / "train_opt.log", "a") as f:
        f.write("2026-11-30 05:40:00 [opt] step 9999 loss 1.5 tok/s 123456\n")
    ingest(fleet_folder, str(copy_store), workers=1)
    new_parts = set(Manifest.read(*layout.filesystem(str(copy_store))).sources["train_opt.log"].parts)
    assert new_parts and not new_parts & old_parts
    after = window.load_window(str(copy_store), root=fleet_folder, config=cfg)
    assert len(after.metrics) > len(before.metrics) and after.metrics["step"].max() == 9999
    assert_same_frames(load_incident(fleet_folder).metrics, after.metrics, "metrics")


def test_rows_already_in_load_order_are_not_taken_again():
    # A direct load's order: time (missing first), then the source's load order, then its row.
    import numpy as np
    import pyarrow as pa

    t = pd.to_datetime(["2026-11-30 05:00:00", "2026-11-30 05:00:00", "2026-11-30 05:00:01", None], utc=True)
    rows = pa.table({"time": pa.array([None, *t[:3]], pa.timestamp("us", tz="UTC")),
                     layout.FILE_COLUMN: ["b.log", "a.log", "b.log", "a.log"],
                     layout.ROW_COLUMN: pa.array([5, 0, 7, 1], pa.int64())})
    order = {"a.log": 0, "b.log": 1}
    assert window._load_order(rows, "time", order) is None
    shuffled = rows.take([2, 0, 3, 1])
    permutation = window._load_order(shuffled, "time", order)
    assert shuffled.take(pa.array(permutation)).equals(rows)
    # ties at one time in another source order are put in load order
    swapped = rows.take([0, 2, 1, 3])
    assert np.array_equal(window._load_order(swapped, "time", order), [0, 2, 1, 3])
