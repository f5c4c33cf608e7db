"""GPU roles against the expected split; GPUs held idle."""

from dflash_postmortem.detect import detect_role_mismatch


def test_seed_role_mismatch(seed_findings, seed_dir, line_at):
    rm = seed_findings[seed_findings["kind"] == "role_mismatch"]
    assert len(rm) == 1
    n = rm.iloc[0]["numbers"]
    assert (n["observed_heavy"], n["observed_light"]) == (5, 3)
    assert (n["expected_heavy"], n["expected_light"]) == (6, 2)
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
