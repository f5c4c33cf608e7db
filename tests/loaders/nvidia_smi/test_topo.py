"""nvidia-smi topo -m: the link matrix as configuration rows, a second matrix counted only."""

from __future__ import annotations

import dflash_postmortem as pm

TOPO = """\
\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tPIX\t0-51,104-155\t0\t\tN/A
GPU1\tNV18\t X \tSYS\t52-103,156-207\t1\t\tN/A
NIC0\tPIX\tSYS\t X

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0

 \tGPU0\tGPU1\t
 GPU0\tX\tOK\t
 GPU1\tOK\tX\t
"""


def test_matrix_rows_and_summary(tmp_path):
    (tmp_path / "topo.txt").write_text(TOPO)
    inc = pm.load_incident(tmp_path)
    g = inc.gpus.set_index("gpu")
    assert g.loc[1, "topo_links"] == "GPU0:NV18 NIC0:SYS" and g.loc[1, "numa_affinity"] == "1"
    assert g["time"].isna().all() and inc.events.empty
    rep = inc.load_report.files[0]
    assert rep.format == "nvidia-smi-topo" and rep.balanced
    assert "GPU pairs: NV18 1" in rep.notes and "NICs: NIC0=mlx5_0" in rep.notes
    assert rep.skipped["another matrix (topo -p2p) after the link matrix"] == 1
    assert rep.skipped["row of another matrix"] == 2
