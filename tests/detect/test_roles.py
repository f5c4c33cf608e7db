"""GPU roles against the expected split; GPUs held idle."""

from dflash_postmortem.detect import detect_role_mismatch


def test_seed_role_mismatch(seed_findings, seed_dir, line_at):
    rm = seed_findings[seed_findings["kind"] == "role_mismatch"]
    assert len(rm) == 1
    n = rm.iloc[0]["numbers"]
    assert (n["observed_heavy"], n["observed_light"]) == ([0, 1, 2, 3, 4], [5, 6, 7])
    assert (n["expected_heavy"], n["expected_light"]) == ([0, 1, 2, 3, 4, 5], [6, 7])
    assert n["observed_classes"][5] == "light"
    # the title and the detail say what the numbers say
    assert rm.iloc[0]["title"] == "host pve-gpu8: GPU roles: observed 5 heavy + 3 light, expected 6 target + 2 drafter"
    assert "GPU 5 is light (8722 MiB), expected heavy" in rm.iloc[0]["detail"]
    assert n["gpus_out_of_place"] == [5]
    cited = [line_at(seed_dir, r) for r in rm.iloc[0]["evidence"]]
    assert "5, 8725 MiB, 0 %" in cited and "0, 87069 MiB, 9 %" in cited


def test_seed_idle_allocated_gpu(seed_findings):
    idle = seed_findings[seed_findings["kind"] == "idle_allocated_gpu"]
    assert idle["numbers"].map(lambda n: n["gpu"]).tolist() == [5]


def test_no_roles_no_mismatch(bundled_incident):
    """The bundled capture has no incident.toml roles: nothing to compare."""
    assert (detect_role_mismatch(bundled_incident)["kind"] != "role_mismatch").all()


def test_before_the_incident_roles_match(seed_incident):
    g = seed_incident.gpus
    early = type(seed_incident)(gpus=g[g["time"] < g["time"].min() + (g["time"].max() - g["time"].min()) / 3],
                                config=seed_incident.config)
    assert detect_role_mismatch(early).empty


def _two_hosts(tmp_path, seed_dir, bundled_dir, node18_roles: str):
    """The seed's 8-GPU stream as host node17 and the real H200 stream as host node18."""
    import shutil

    shutil.copy(seed_dir / "logs" / "gpu_query.csv", tmp_path / "node17.csv")
    shutil.copy(bundled_dir / "logs" / "smi_stream.csv", tmp_path / "node18.csv")
    shutil.copy(bundled_dir / "logs" / "smi_apps_stream.csv", tmp_path / "node18_apps.csv")
    (tmp_path / "incident.toml").write_text(f"""
[roles]
target = [0, 1, 2, 3, 4, 5]
drafter = [6, 7]

[roles.node18]
{node18_roles}

[detect]
roles_min_minutes = 0.5

[[sources]]
path = "node17.csv"
format = "nvidia-smi-query-csv"
fields = ["timestamp", "index", "memory.used", "utilization.gpu"]
host = "node17"

[[sources]]
path = "node18.csv"
host = "node18"

[[sources]]
path = "node18_apps.csv"
host = "node18"
""")
    from dflash_postmortem import load_incident

    return load_incident(tmp_path)


def test_each_host_is_judged_against_its_own_split(tmp_path, seed_dir, bundled_dir, line_at):
    from dflash_postmortem.analysis.timeline import impact
    from dflash_postmortem.present import tables

    inc = _two_hosts(tmp_path, seed_dir, bundled_dir, "target = [1]\ndrafter = [0]")
    found = detect_role_mismatch(inc)
    rm = found[found["kind"] == "role_mismatch"]
    by_host = {n["host"]: n for n in rm["numbers"]}
    assert set(by_host) == {"node17", "node18"}
    assert (by_host["node17"]["observed_heavy"], by_host["node17"]["observed_light"]) == ([0, 1, 2, 3, 4], [5, 6, 7])
    assert by_host["node17"]["gpus_out_of_place"] == [5]
    # On the real H200 stream both GPUs hold a model's worth of memory: 2 heavy, not 1 + 1.
    assert (by_host["node18"]["observed_heavy"], by_host["node18"]["expected_heavy"]) == ([0, 1], [1])
    assert by_host["node18"]["gpus_out_of_place"] == [0]
    # per-process placement: the real capture's trainer PIDs on GPU 0, cited from its apps stream
    node18 = rm[[n["host"] == "node18" for n in rm["numbers"]]].iloc[0]
    pids = set(node18["numbers"]["processes"][0])
    assert pids and pids <= {598, 971, 1391}
    cited = [line_at(tmp_path, ref) for ref in node18["evidence"]]
    assert any(f", {pid}, python3, " in c for c in cited for pid in pids)  # its apps-stream line
    assert any(c.startswith("2026/11/30 05:2") and ", 0, GPU-a5691722" in c for c in cited)  # the GPU sample
    assert f"On GPU 0: PID {min(pids)} (python3, " in node18["detail"]
    assert by_host["node17"]["processes"] == {}  # the seed has no per-process samples
    titles = rm["title"].tolist()
    assert any(t.startswith("host node17: GPU roles: observed 5 heavy + 3 light, expected 6 target + 2 drafter") for t in titles)
    assert any(t.startswith("host node18: GPU roles: observed 2 heavy + 0 light, expected 1 target + 1 drafter") for t in titles)
    idle = found[found["kind"] == "idle_allocated_gpu"]
    assert [(n["host"], n["gpu"]) for n in idle["numbers"]] == [("node17", 5)]
    roles = tables.gpu_roles(inc)
    assert roles.loc[(roles["host"] == "node18") & (roles["gpu"] == 0), "expected_role"].tolist() == ["drafter"]
    assert roles.loc[(roles["host"] == "node17") & (roles["gpu"] == 7), "expected_role"].tolist() == ["drafter"]
    imp = impact(inc, found)
    assert imp["gpus_held"] == 8 + 2 and imp["gpus_held_from"].endswith("on 2 hosts")


def test_a_host_whose_split_holds_has_no_finding(tmp_path, seed_dir, bundled_dir):
    inc = _two_hosts(tmp_path, seed_dir, bundled_dir, "target = [0, 1]")
    rm = detect_role_mismatch(inc)
    assert [n["host"] for n in rm[rm["kind"] == "role_mismatch"]["numbers"]] == ["node17"]


def test_a_bad_host_table_names_its_key(tmp_path, seed_dir, bundled_dir):
    import pytest

    from dflash_postmortem.errors import IncidentConfigError

    with pytest.raises(IncidentConfigError, match=r"roles\.node18\.target: expected an array of GPU indices"):
        _two_hosts(tmp_path, seed_dir, bundled_dir, 'target = "0,1"')
