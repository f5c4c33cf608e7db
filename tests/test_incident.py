"""Incident folders: every file accounted for, incident.toml honoured, bad configs named."""

import shutil

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.errors import IncidentConfigError


def test_bundled_incident_accounts_for_every_file(bundled_dir):
    inc = pm.load_incident(bundled_dir, on_bad_line="skip")
    on_disk = {p.relative_to(bundled_dir).as_posix() for p in bundled_dir.rglob("*") if p.is_file() or p.is_symlink()}
    reported = {f.path for f in inc.load_report.files}
    # A folder format (a wandb run) reports its files as one entry or one each; either way every
    # file on disk must be named by, or lie inside, a reported path.
    for path in on_disk:
        assert any(path == r or path.startswith(r.rstrip("/") + "/") for r in reported), path
    inc.validate()


def test_load_report_balances_lines_for_every_loaded_file(bundled_dir):
    inc = pm.load_incident(bundled_dir, on_bad_line="skip")
    for f in inc.load_report.loaded:
        assert f.balanced, f.summary()


def test_query_csv_values_from_the_real_capture(bundled_dir):
    inc = pm.load_incident(bundled_dir, on_bad_line="skip")
    smi = inc.gpus[inc.gpus["source"] == "logs/smi_stream.csv"]
    assert len(smi) == 580  # 581 lines, one header
    first = smi.iloc[0]
    assert first["time"] == pd.Timestamp("2026-11-30 05:20:20.701", tz="UTC")
    assert first["uuid"] == "GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239"
    assert first["memory_total_mib"] == 143771 and first["power_w"] == pytest.approx(78.84)
    assert set(smi["gpu"]) == {0, 1}
    assert smi["memory_used_mib"].max() > 4000  # the trainers held memory at some point


def test_incident_toml_timezone_and_ignore(tmp_path, bundled_dir):
    shutil.copy(bundled_dir / "logs" / "smi_stream.csv", tmp_path / "a.csv")
    (tmp_path / "notes.txt").write_text("operator notes\n")
    (tmp_path / "incident.toml").write_text('title = "Test"\ntimezone = "Asia/Tokyo"\nignore = ["notes.txt"]\n')
    inc = pm.load_incident(tmp_path)
    assert inc.title == "Test"
    # 05:20:20.701 in Tokyo (UTC+9) is 20:20:20.701 UTC the day before.
    assert inc.gpus["time"].iloc[0] == pd.Timestamp("2026-11-29 20:20:20.701", tz="UTC")
    assert "no time zone in file, read as Asia/Tokyo" in inc.load_report["a.csv"].assumptions
    assert inc.load_report["notes.txt"].notes == ["ignored by incident.toml"]


def test_manual_offsets_shift_a_source(tmp_path, bundled_dir):
    shutil.copy(bundled_dir / "logs" / "smi_stream.csv", tmp_path / "a.csv")
    (tmp_path / "incident.toml").write_text('[offsets]\n"a.csv" = -2.5\n')
    inc = pm.load_incident(tmp_path)
    assert inc.gpus["time"].iloc[0] == pd.Timestamp("2026-11-30 05:20:18.201", tz="UTC")
    assert inc.load_report.offsets == {"a.csv": -2.5}


@pytest.mark.parametrize(
    "text, message",
    [
        ('timezone = "Mars/Olympus"', "unknown time zone 'Mars/Olympus'"),
        ("recovery_fraction = 1.5", "recovery_fraction: expected a number in (0, 1]"),
        ("color = 1", "unknown key(s) ['color']"),
        ("[roles]\ntarget = ['a']", "roles.target: expected an array of GPU indices (or a [roles.HOST] table), found ['a'] (an array)"),
        ("title = ", "not valid TOML"),
        # Wrong types: the key, the type expected and what was found, in one line.
        ("title = 5", "title: expected a string, found 5 (an integer)"),
        ('hosts = "node17"', "hosts: expected an array of strings, found 'node17' (a string)"),
        ("timezone = 1", "timezone: expected a string, found 1 (an integer)"),
        ("expected_tok_per_s = '21500'", "expected_tok_per_s: expected a number, found '21500' (a string)"),
        ("expected_tok_per_s = true", "expected_tok_per_s: expected a number, found True (a boolean)"),
        ("date = 2026-11-30T01:02:03", "date: expected a date YYYY-MM-DD, found datetime.datetime(2026, 11, 30, 1, 2, 3) (a date-time)"),
        ("offsets = 3", "offsets: expected a table of seconds"),
        ("[offsets]\n'a.csv' = 'soon'", "offsets.a.csv: expected a number, found 'soon' (a string)"),
        ("ignore = '*.bak'", "ignore: expected an array of strings, found '*.bak' (a string)"),
        ("detect = 1", "detect: expected a [detect] table, found 1 (an integer)"),
        ("[detect]\nstall_s = '30'", "detect.stall_s: expected a number, found '30' (a string)"),
        ("[detect]\nstal_s = 30", "detect.stal_s: unknown option"),
        ("roles = [0, 1]", "roles: expected a table like target = [0, 1], found [0, 1] (an array)"),
        ("[[sources]]\nformat = 'x'", "sources[0]: a [[sources]] entry needs a path"),
        ("[[sources]]\npath = 'a.csv'\nfields = 'index'", "sources[a.csv].fields: expected an array of strings"),
        ("[[sources]]\npath = 'a.csv'\nhost = 17", "sources[a.csv].host: expected a string, found 17 (an integer)"),
        ("sources = 'a.csv'", "sources: expected [[sources]] tables, found 'a.csv' (a string)"),
        ("[[patterns]]\nname = 'p'\nregex = '(unclosed'\nmetric = 'train/x'", "patterns[p].regex: not a valid regular expression"),
        ("[[patterns]]\nname = 'p'\nregex = 'tok (\\d+)'\nmetric = 'train/x'", "patterns[p].regex: needs a (?P<value>...) group"),
        ("[[patterns]]\nname = 'p'\nregex = '(?P<value>\\d+)'", "patterns[p].metric: missing"),
    ],
)
def test_bad_incident_toml_is_named(tmp_path, text, message):
    (tmp_path / "incident.toml").write_text(text + "\n")
    with pytest.raises(IncidentConfigError) as e:
        pm.load_incident(tmp_path)
    assert message in str(e.value) and "incident.toml" in str(e.value)


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(pm.PostmortemError, match="no such file or folder"):
        pm.load_incident(tmp_path / "nope")


def test_headerless_query_csv_needs_a_field_list(tmp_path):
    f = tmp_path / "smi.csv"
    f.write_text("0, 87069 MiB, 9 %\n1, 72649 MiB, 12 %\n")
    with pytest.raises(pm.SourceFormatError) as e:
        pm.load_nvidia_smi(f)
    assert e.value.line == 1 and "field list" in e.value.expected
    gpus = pm.load_nvidia_smi(f, fields=["index", "memory.used", "utilization.gpu"]).gpus
    assert gpus["memory_used_mib"].tolist() == [87069, 72649]
    assert gpus["util_gpu_pct"].tolist() == [9, 12]


def test_two_runs_with_one_name_stay_apart(tmp_path, bundled_dir):
    # A relaunch that reuses its run name: copy the real `fixed` run under a second folder and
    # give it another id, as a second launch of the same command would get.
    import shutil

    src = next((bundled_dir / "wandb" / "wandb").glob("offline-run-*kpqfxkj2"))
    shutil.copytree(src, tmp_path / src.name)
    inc1 = pm.load_incident(tmp_path)
    (name,) = inc1.runs
    info = inc1.runs[name]
    part2 = pm.Incident(metrics=inc1.metrics.copy(), runs={name: pm.RunInfo(run=name, id="zzzzzzzz", name=name)})
    merged = pm.Incident.combine([inc1, part2])
    assert set(merged.runs) == {name, f"{name} (zzzzzzzz)"} and merged.runs[name].id == info.id
    counts = merged.metrics["run"].value_counts()
    assert counts[name] == counts[f"{name} (zzzzzzzz)"] == len(inc1.metrics)
    assert any("two runs are named" in n for n in merged.load_report.notes)


def test_a_listings_span_runs_to_its_last_snapshot(repo_dir):
    """h200-1gpu-pkill-both's logs/ps.txt: snapshots from 18:09:38 to 18:11:49 (its last `#` stamp),
    the last process it shows started at 18:10:31: the file's span is its snapshots', not its
    processes' first sightings (it said 18:10:32)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(repo_dir / "data" / "incidents" / "h200-1gpu-pkill-both" / "logs" / "ps.txt")
    (rep,) = inc.load_report.files
    assert (f"{rep.start:%H:%M:%S}", f"{rep.end:%H:%M:%S}") == ("18:09:38", "18:11:49")
