"""Fleet-wide detectors: DuckDB SQL over every host's GPU samples, each host and GPU judged on its own first.

A `Fleet` takes a DuckDB connection that has one view per canonical frame (`gpus`, `metrics`,
`events`, ... with schema.FRAMES' columns: a Parquet store's views, or an incident's frames,
`registered`) and reads the GPU samples once into per-minute buckets per GPU (`fleet_gpu_minutes`:
mean and extremes of each reading, samples that answered nothing); every detector is SQL over
those buckets, so the whole fleet is scanned once however many questions are asked:

- `stragglers`: a GPU that sets the pace of its host's synchronous job, for STRAGGLER_MIN_MINUTES.
  Its clock shows it: an SM clock CLOCK_GAP below its busy peers' on the host while it is itself
  at >= BUSY_UTIL_PCT (a GPU throttled by heat or power works flat out, the others spinning in
  NCCL show as busy; a GPU that waits drops its clock for another reason), with the
  host's job behind the other hosts where they log tok/s; or, where utilization does tell, busy
  (>= BUSY_UTIL_PCT) while the host's other GPUs wait STRAGGLER_GAP_PCT lower and the host sits
  that far below the fleet's median. Its clock, power, temperature and clock event reasons (why
  the driver held its clocks down, where the capture has them) against its peers', the
  host's and the fleet's tok/s are the numbers. A host whose tok/s stays MIN_DROP below the
  fleet's median with no such GPU is a straggler host (gpu None).
- `gpu_errors`: a GPU still enumerated whose readings are all missing (nvidia-smi's `[GPU is
  lost]`, `ERR!`), with the host's gpu_lost / gpu_error / xid events as evidence; such events with
  no silent GPU make a finding of their own.
- `idle_allocated`: a GPU holding memory (gpu_state.HELD_MIB) at < IDLE_UTIL_PCT for
  roles.MIN_MINUTES.
- `role_drift`: a host whose heavy/light memory split differs from incident.toml's roles for
  roles.MIN_MINUTES (the heavy rule of detect/roles.py, roles.heavy_sql: HEAVY_FRACTION of the host's most, at least 1 GiB).
- `restarts_never_came_up`: a launch on a host after which, for restart.GRACE_S and to the end of
  what the host reported, no GPU held memory and no rank logged a step.

Training logs carry no host: a metrics `source` gets the host its own events name (a log's
stage lines), else that of the nvidia-smi capture in the same folder.

`told_with_fleet(inc, told)` adds to an incident's own findings (detect(): each host judged on
its own) the fleet's that they do not already tell, and links a host's drop to the GPU that set
its pace. The store's `fleet` command (store/fleet.py) runs the same detectors over a whole store.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import pandas as pd

from ..config import IncidentConfig
from ..incident import Incident
from ..model.attempts import MACHINE_FAULTS
from ..model.gpu_state import HELD_MIB, IDLE_UTIL_PCT
from ..schema import FRAME_NAMES, TOK_PER_S
from . import findings
from .clock_reasons import reason_names
from .restart import GRACE_S
from .roles import MIN_MINUTES, heavy_roles, heavy_sql
from .throughput import MIN_DROP

BUCKET_S = 60  # one judgement per GPU per minute: 512 GPUs x 3 days is 2.2 M buckets
BUSY_UTIL_PCT = 90.0  # a GPU that sets the pace of a synchronous job is never waiting itself
STRAGGLER_GAP_PCT = 25.0  # how far below it the waiting GPUs (and the host below the fleet) sit
STRAGGLER_MIN_MINUTES = 5.0
# A GPU's SM clock this far below its busy peers' (H200: 1050 against 1980 MHz when it throttles
# for heat; a power cap shared by every GPU moves them together) slows every step of the job.
CLOCK_GAP = 0.2
_US = 1_000_000


def _time(us) -> pd.Timestamp | None:
    return None if us is None or pd.isna(us) else pd.Timestamp(int(us), unit="us", tz="UTC")


def _num(x, digits: int = 1) -> float | None:
    return None if x is None or pd.isna(x) else round(float(x), digits)


# Per (host, GPU, bucket), over whatever share of the `gpus` rows the relation `rows` holds: sums
# and counts rather than means, so that shares scanned apart merge exactly.
# NaN and NULL are both "no reading": pandas frames register NaN as NULL, Parquet may keep NaN.
_BUCKET_PARTS = """
    , s AS (
        SELECT host, gpu, uuid, source, epoch_us(time) AS us,
               nullif(util_gpu_pct, 'NaN'::DOUBLE) AS util,
               nullif(memory_used_mib, 'NaN'::DOUBLE) AS mem,
               nullif(sm_clock_mhz, 'NaN'::DOUBLE) AS clk
        FROM rows WHERE time IS NOT NULL AND host IS NOT NULL AND gpu IS NOT NULL
    )
    SELECT host, gpu, us // {b} AS b, count(*) AS n,
           count(*) FILTER (WHERE util IS NULL AND mem IS NULL) AS n_silent,
           min(us) FILTER (WHERE util IS NULL AND mem IS NULL) AS first_silent_us,
           max(us) FILTER (WHERE util IS NOT NULL OR mem IS NOT NULL) AS last_reading_us,
           sum(util) AS util_sum, count(util) AS util_n, max(util) AS util_max,
           sum(clk) AS clk_sum, count(clk) AS clk_n,
           sum(mem) AS mem_sum, count(mem) AS mem_n, min(mem) AS mem_min, max(mem) AS mem_max,
           min(uuid) AS uuid, min(source) AS source
    FROM s GROUP BY ALL
"""


class Fleet:
    """The fleet-wide questions over one connection's views. Buckets are built on first use."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, config: IncidentConfig | None = None,
                 bucket_s: int = BUCKET_S, scan: Callable[[str], object] | None = None):
        """`con` has the frames' views; with `scan`, the one scan of every GPU sample runs through
        it: given the partial-sums query (SQL over a relation `rows`), it returns the sums as an
        Arrow table (the store's dask path: one task per group of Parquet parts,
        store/fleet.py `on_cluster`), and only the per-minute buckets come back."""
        self.con = con
        self.config = config or IncidentConfig()
        self.bucket_s = int(bucket_s)
        self.scan = scan
        self._built = False

    # -- the one scan ------------------------------------------------------------------------
    def _columns(self, view: str) -> set[str]:
        return {r[0] for r in self.con.execute(f"DESCRIBE {view}").fetchall()}

    def _build(self) -> None:
        if self._built:
            return
        # The scan in two steps: partial sums per bucket over any share of the rows (all of them
        # here, one group of Parquet parts per task on a cluster), then the sums merged.
        partial = _BUCKET_PARTS.format(b=self.bucket_s * _US)
        if self.scan is None:
            self.con.execute("CREATE OR REPLACE TEMP TABLE fleet_gpu_minute_parts AS "
                             f"WITH rows AS (SELECT * FROM gpus) {partial}")
        else:
            self.con.register("fleet_gpu_minute_parts", self.scan(partial))
        self.con.execute("""
            CREATE OR REPLACE TEMP TABLE fleet_gpu_minutes AS
            SELECT host, gpu, b, sum(n) AS n, sum(n_silent) AS n_silent, min(first_silent_us) AS first_silent_us,
                   max(last_reading_us) AS last_reading_us,
                   sum(util_sum) / nullif(sum(util_n), 0) AS util, max(util_max) AS util_max,
                   sum(clk_sum) / nullif(sum(clk_n), 0) AS clk,
                   sum(mem_sum) / nullif(sum(mem_n), 0) AS mem, min(mem_min) AS mem_min, max(mem_max) AS mem_max,
                   min(uuid) AS uuid, min(source) AS source
            FROM fleet_gpu_minute_parts GROUP BY host, gpu, b
        """)
        # Host and fleet levels per bucket, and each GPU's peers (the host's other GPUs).
        self.con.execute(f"""
            CREATE OR REPLACE TEMP TABLE fleet_host_minutes AS
            SELECT host, b, median(util) AS util, max(mem) AS mem_max, count(util) AS gpus_reporting,
                   median(clk) FILTER (WHERE mem >= {HELD_MIB}) AS busy_clk
            FROM fleet_gpu_minutes GROUP BY ALL
        """)
        horizon = max(1, 1800 // self.bucket_s)
        self.con.execute(f"""
            CREATE OR REPLACE TEMP TABLE fleet_minutes AS
            WITH m AS (
                SELECT b, median(util) AS util, median(clk) AS clk
                FROM fleet_gpu_minutes WHERE mem >= {HELD_MIB} GROUP BY b
            )
            -- The fleet's level is a median over the hour around each minute: in a small fleet two
            -- hosts in trouble at once would otherwise drag one minute's median down with them.
            SELECT b, median(util) OVER w AS util, median(clk) OVER w AS clk FROM m
            WINDOW w AS (ORDER BY b RANGE BETWEEN {horizon} PRECEDING AND {horizon} FOLLOWING)
        """)
        self._build_throughput()
        self._built = True

    def _build_throughput(self) -> None:
        """Each host's tok/s per bucket: the median over its ranks' step lines."""
        b = self.bucket_s * _US
        self.con.execute("""
            CREATE OR REPLACE TEMP TABLE fleet_source_host AS
            WITH own AS (
                SELECT source, min(host) AS host FROM events
                WHERE host IS NOT NULL AND source IS NOT NULL GROUP BY source
            ), capture AS (
                SELECT DISTINCT regexp_replace(source, '/[^/]*$', '') AS folder, host
                FROM fleet_gpu_minutes WHERE source LIKE '%/%'
            ), folder AS (
                SELECT folder, min(host) AS host FROM capture GROUP BY folder HAVING count(*) = 1
            ), logs AS (SELECT DISTINCT source FROM metrics WHERE source IS NOT NULL)
            SELECT logs.source, coalesce(own.host, folder.host) AS host
            FROM logs LEFT JOIN own USING (source)
            LEFT JOIN folder ON folder.folder = regexp_replace(logs.source, '/[^/]*$', '')
        """)
        self.con.execute(f"""
            CREATE OR REPLACE TEMP TABLE fleet_host_tok AS
            SELECT h.host, epoch_us(m.time) // {b} AS b, median(m.value) AS tok,
                   count(*) AS lines, max(epoch_us(m.time)) AS last_us
            FROM metrics m JOIN fleet_source_host h USING (source)
            WHERE m.metric = '{TOK_PER_S}' AND h.host IS NOT NULL AND m.time IS NOT NULL
              AND NOT isnan(m.value)
            GROUP BY ALL
        """)

    def _df(self, sql: str, params=None) -> pd.DataFrame:
        self._build()
        return self.con.execute(sql, params or []).df()

    def _t(self, b) -> pd.Timestamp:
        return _time(int(b) * self.bucket_s * _US)

    # -- levels --------------------------------------------------------------------------------
    def gpu_levels(self) -> pd.DataFrame:
        """Per GPU over the whole store: median utilization, SM clock and memory of its minutes,
        the share of samples that answered nothing, first and last sample."""
        df = self._df("""
            SELECT host, gpu, median(util) AS util_pct, median(clk) AS sm_clock_mhz, median(mem) AS memory_mib,
                   sum(n_silent) / sum(n) AS silent_share, sum(n) AS samples,
                   min(b) AS first_b, max(b) AS last_b
            FROM fleet_gpu_minutes GROUP BY ALL ORDER BY host, gpu
        """)
        return self._with_times(df)

    def host_levels(self) -> pd.DataFrame:
        """Per host: median utilization of its GPUs, median tok/s of its job, and the fleet's."""
        df = self._df("""
            SELECT h.host, median(h.util) AS util_pct, median(t.tok) AS tok_per_s,
                   min(h.b) AS first_b, max(h.b) AS last_b
            FROM fleet_host_minutes h LEFT JOIN fleet_host_tok t USING (host, b)
            GROUP BY ALL ORDER BY host
        """)
        return self._with_times(df)

    def _with_times(self, df: pd.DataFrame) -> pd.DataFrame:
        df["first"] = pd.to_datetime(df.pop("first_b") * self.bucket_s * _US, unit="us", utc=True)
        df["last"] = pd.to_datetime((df.pop("last_b") + 1) * self.bucket_s * _US, unit="us", utc=True)
        df["host"] = df["host"].astype("string")
        return df

    # -- runs of flagged minutes -----------------------------------------------------------------
    def _runs(self, flagged_sql: str, keys: str, min_minutes: float, extra: str = "") -> pd.DataFrame:
        """Runs of consecutive flagged buckets per `keys` lasting `min_minutes`: keys, b0, b1, n
        and the `extra` aggregates over the run's rows (gaps and islands: b - row_number)."""
        need = max(1, int(round(min_minutes * 60 / self.bucket_s)))
        return self._df(f"""
            WITH f AS ({flagged_sql}),
            g AS (SELECT *, b - row_number() OVER (PARTITION BY {keys} ORDER BY b) AS island FROM f)
            SELECT {keys}, min(b) AS b0, max(b) AS b1, count(*) AS n {extra}
            FROM g GROUP BY {keys}, island HAVING count(*) >= {need} ORDER BY {keys}, b0
        """)

    # -- detectors -----------------------------------------------------------------------------
    def stragglers(self) -> pd.DataFrame:
        gap, clock_gap = STRAGGLER_GAP_PCT, CLOCK_GAP
        # Against the host's medians of the minute (its GPUs holding memory for the clock): with
        # eight GPUs, one slow GPU moves the median of eight no more than the median of its seven
        # peers, and the host's medians are one row a minute, not a join of every GPU with its peers.
        runs = self._runs(f"""
            WITH fleet_tok AS (SELECT b, median(tok) AS tok, count(*) AS hosts FROM fleet_host_tok GROUP BY b)
            SELECT g.host, g.gpu, g.b, g.util, g.clk, h.util AS peers, h.busy_clk AS peers_clk, f.util AS fleet,
                   f.clk AS fleet_clk
            FROM fleet_gpu_minutes g
            JOIN fleet_host_minutes h ON h.host = g.host AND h.b = g.b
            JOIN fleet_minutes f ON f.b = g.b
            LEFT JOIN fleet_host_tok t ON t.host = g.host AND t.b = g.b
            LEFT JOIN fleet_tok ft ON ft.b = g.b
            WHERE g.mem >= {HELD_MIB} AND (
                -- its clock: slower than its busy peers while it works flat out (a GPU that waits,
                -- a drafter between batches, drops its clock too), and its job behind the others
                -- where they log a pace (a host alone logging is no reference for itself)
                (g.clk <= (1 - {clock_gap}) * h.busy_clk AND g.util >= {BUSY_UTIL_PCT}
                 AND (t.tok IS NULL OR ft.hosts < 2 OR t.tok < (1 - {MIN_DROP}) * ft.tok))
                -- or its utilization, where the others' waiting shows in theirs
                OR (g.util >= {BUSY_UTIL_PCT} AND h.util <= g.util - {gap} AND h.util <= f.util - {gap}))
        """, "host, gpu", STRAGGLER_MIN_MINUTES,
            ", median(util) AS util, median(clk) AS clk, median(peers) AS peers, median(fleet) AS fleet, "
            "median(fleet_clk) AS fleet_clk, median(peers_clk) AS peers_clk")
        rows = [self._straggler(r, int(r.gpu)) for r in runs.itertuples()]
        paced = {(r.host, b) for r in runs.itertuples() for b in range(int(r.b0), int(r.b1) + 1)}
        # A whole host behind the fleet, with no GPU of its own setting the pace (network, input).
        slow = self._runs(f"""
            SELECT t.host, t.b, t.tok, f.tok AS fleet FROM fleet_host_tok t
            JOIN (SELECT b, median(tok) AS tok FROM fleet_host_tok GROUP BY b) f USING (b)
            WHERE t.tok < (1 - {MIN_DROP}) * f.tok
        """, "host", STRAGGLER_MIN_MINUTES, ", median(tok) AS tok, median(fleet) AS fleet")
        for r in slow.itertuples():
            if not any((r.host, b) in paced for b in range(int(r.b0), int(r.b1) + 1)):
                rows.append(self._straggler(r, None))
        return findings.frame(rows)

    def _tok_around(self, host: str, b0: int, b1: int) -> tuple[float | None, float | None, float | None]:
        """The host's median tok/s in the 10 buckets before b0 and within [b0, b1], and the other
        hosts' median within."""
        before, during, fleet = self._df("""
            SELECT median(tok) FILTER (WHERE host = $1 AND b >= $2 - 10 AND b < $2),
                   median(tok) FILTER (WHERE host = $1 AND b BETWEEN $2 AND $3),
                   median(tok) FILTER (WHERE host <> $1 AND b BETWEEN $2 AND $3)
            FROM fleet_host_tok
        """, [host, b0, b1]).iloc[0]
        return _num(before, 0), _num(during, 0), _num(fleet, 0)

    def _straggler(self, r, gpu: int | None) -> dict:
        t0, t1 = self._t(r.b0), self._t(r.b1 + 1)
        before, during, fleet = self._tok_around(r.host, int(r.b0), int(r.b1))
        ratio = round(during / before, 3) if before and during is not None else None
        minutes = r.n * self.bucket_s / 60
        if gpu is None:
            numbers = {"host": r.host, "gpu": None, "tok_per_s_before": before, "tok_per_s_during": during,
                       "fleet_tok_per_s": fleet, "ratio": ratio, "minutes": minutes,
                       "host_tok_per_s": _num(r.tok), "fleet_median_tok_per_s": _num(r.fleet)}
        else:
            numbers = {"host": r.host, "gpu": gpu, "util_pct": _num(r.util), "peers_util_pct": _num(r.peers),
                       "fleet_util_pct": _num(r.fleet), "sm_clock_mhz": _num(r.clk, 0),
                       **self._beside_peers(r.host, gpu, t0, t1),
                       "shown_by": "clock" if pd.notna(r.peers_clk) and r.clk <= (1 - CLOCK_GAP) * r.peers_clk
                       else "utilization",
                       "fleet_sm_clock_mhz": _num(r.fleet_clk, 0), "tok_per_s_before": before,
                       "tok_per_s_during": during, "fleet_tok_per_s": fleet, "ratio": ratio, "minutes": minutes}
        return findings.finding("straggler", t0, t1, "warning", self._gpu_refs(r.host, gpu, t0) + self._log_refs(r.host), numbers)

    def _beside_peers(self, host: str, gpu: int, t0: pd.Timestamp, t1: pd.Timestamp) -> dict:
        """The GPU's SM clock, power, temperature and clock event reasons over [t0, t1) against its
        peers' (the host's other GPUs holding memory: the median of their medians, the reasons
        any of them had), from the samples: one host's, for one finding."""
        why = ("TRY_CAST(clocks_event_reasons AS UBIGINT)" if "clocks_event_reasons" in self._columns("gpus")
               else "NULL::UBIGINT")
        each = self._df(f"""
            SELECT gpu, median(sm_clock_mhz) AS clk, median(power_w) AS pwr, median(temp_c) AS tmp, bit_or({why}) AS why
            FROM gpus WHERE host = $1 AND time >= $2 AND time < $3 AND memory_used_mib >= {HELD_MIB}
            GROUP BY gpu
        """, [host, t0, t1]).set_index("gpu")
        own = each.loc[gpu] if gpu in each.index else pd.Series(dtype=float)
        peers = each.drop(index=gpu, errors="ignore")
        reasons = 0
        for w in peers["why"].dropna():
            reasons |= int(w)
        return {"peers_sm_clock_mhz": _num(peers["clk"].median(), 0),
                "power_w": _num(own.get("pwr"), 0), "peers_power_w": _num(peers["pwr"].median(), 0),
                "temp_c": _num(own.get("tmp"), 0), "peers_temp_c": _num(peers["tmp"].median(), 0),
                "clock_reasons": reason_names(own.get("why")),
                "peers_clock_reasons": reason_names(reasons if peers["why"].notna().any() else None)}

    def gpu_errors(self) -> pd.DataFrame:
        runs = self._runs("SELECT * FROM fleet_gpu_minutes WHERE n_silent > 0", "host, gpu", 0,
                          ", min(first_silent_us) AS first_us, sum(n_silent) AS silent")
        events = self._df(f"""
            SELECT host, epoch_us(time) AS us, kind, message, ref FROM events
            WHERE kind IN {MACHINE_FAULTS} AND host IS NOT NULL ORDER BY us
        """)
        rows, used = [], set()
        for r in runs.itertuples():
            t0, t1 = _time(r.first_us), self._t(r.b1 + 1)
            # The events that name the failure: on its host, from a bucket before it went silent.
            near = events[(events["host"] == r.host) & (events["us"] >= (r.b0 - 1) * self.bucket_s * _US)
                          & (events["us"] < (r.b1 + 1) * self.bucket_s * _US)]
            used |= set(near.index)
            last, uuid = self._df(
                "SELECT max(last_reading_us), arg_max(uuid, b) FILTER (WHERE uuid IS NOT NULL) FROM fleet_gpu_minutes "
                "WHERE host = $1 AND gpu = $2 AND b <= $3", [r.host, int(r.gpu), int(r.b1)]).iloc[0]
            kinds = sorted(set(near["kind"]))
            lost = "gpu_lost" in kinds or any("lost" in str(m).lower() for m in near["message"])
            minutes = (t1 - t0).total_seconds() / 60
            rows.append(findings.finding(
                "gpu_error", t0, t1, "critical" if lost or minutes >= 1 else "warning",
                near["ref"].dropna().tolist() + self._gpu_refs(r.host, int(r.gpu), t0, silent=True),
                {"host": r.host, "gpu": int(r.gpu), "uuid": uuid if isinstance(uuid, str) else None,
                 "samples_missing": int(r.silent), "minutes": round(minutes, 2), "event_kinds": kinds,
                 "last_reading": _time(last), "lost": lost, "events": len(near),
                 "message": str(near["message"].iloc[0]) if len(near) else None}))
        for host, rest in events.drop(index=list(used)).groupby("host"):
            t0 = _time(rest["us"].min())
            rows.append(findings.finding(
                "gpu_error", t0, _time(rest["us"].max()), "warning", rest["ref"].dropna().tolist(),
                {"host": host, "gpu": None, "uuid": None, "samples_missing": 0, "minutes": 0.0,
                 "event_kinds": sorted(set(rest["kind"])), "last_reading": None, "lost": False,
                 "events": len(rest), "message": str(rest["message"].iloc[0])}))
        return findings.frame(rows)

    def idle_allocated(self, min_minutes: float | None = None) -> pd.DataFrame:
        minutes = self._min_minutes(min_minutes)
        runs = self._runs(f"""
            SELECT * FROM fleet_gpu_minutes
            WHERE mem_min >= {HELD_MIB} AND util_max < {IDLE_UTIL_PCT} AND n_silent = 0
        """, "host, gpu", minutes, ", median(mem) AS mem, max(util_max) AS util_max")
        rows = []
        for r in runs.itertuples():
            t0, t1 = self._t(r.b0), self._t(r.b1 + 1)
            rows.append(findings.finding(
                "idle_allocated_gpu", t0, t1, "warning", self._gpu_refs(r.host, int(r.gpu), t0),
                {"host": r.host, "host_named": True, "beside_busy": False, "gpu": int(r.gpu), "memory_mib": float(r.mem), "max_util_pct": float(r.util_max),
                 "minutes": r.n * self.bucket_s / 60}))
        return findings.frame(rows)

    def role_drift(self, min_minutes: float | None = None) -> pd.DataFrame:
        """Per host, minutes whose heavy/light split differs from the expected roles."""
        cfg = self.config
        if not cfg.has_roles:
            return findings.empty()
        heavy = heavy_roles(cfg)
        hosts = self._df("SELECT DISTINCT host FROM fleet_gpu_minutes")["host"].tolist()
        expected = pd.DataFrame(
            [(h, gpu, role in heavy) for h in hosts for role, gpus in cfg.roles_for(h).items() for gpu in gpus],
            columns=["host", "gpu", "heavy"])
        if expected.empty:
            return findings.empty()
        self.con.register("fleet_expected_roles", expected.astype({"host": "string", "gpu": "int64"}))
        # heavy as detect/roles.py judges a GPU sample, here on a minute's medians
        is_heavy = heavy_sql("g.mem", "h.mem_max")
        runs = self._runs(f"""
            SELECT g.host, g.b,
                   list(g.gpu ORDER BY g.gpu) FILTER (WHERE {is_heavy} <> e.heavy) AS wrong,
                   list(g.gpu ORDER BY g.gpu) FILTER (WHERE {is_heavy}) AS heavy
            FROM fleet_gpu_minutes g
            JOIN fleet_expected_roles e USING (host, gpu)
            JOIN fleet_host_minutes h USING (host, b)
            WHERE g.mem IS NOT NULL AND h.mem_max >= {HELD_MIB}
            GROUP BY ALL HAVING count(*) FILTER (WHERE {is_heavy} <> e.heavy) > 0
        """, "host", self._min_minutes(min_minutes), ", flatten(list(DISTINCT wrong)) AS wrong, "
            "any_value(heavy) AS heavy")
        rows = []
        for r in runs.itertuples():
            t0, t1 = self._t(r.b0), self._t(r.b1 + 1)
            roles = cfg.roles_for(r.host)
            exp_heavy = sorted(g for role, gpus in roles.items() if role in heavy for g in gpus)
            exp_light = sorted(g for role, gpus in roles.items() if role not in heavy for g in gpus)
            observed_heavy = sorted(int(g) for g in r.heavy)
            wrong = sorted({int(g) for g in r.wrong})
            mem = self._df("SELECT gpu, median(mem) AS m FROM fleet_gpu_minutes WHERE host = $1 AND b BETWEEN $2 AND $3 "
                           "GROUP BY gpu ORDER BY gpu", [r.host, int(r.b0), int(r.b1)])
            rows.append(findings.finding(
                "role_mismatch", t0, t1, "warning", self._gpu_refs(r.host, wrong[0] if wrong else None, t0),
                {"host": r.host, "host_named": True, "expected_roles": roles, "expected_heavy": exp_heavy,
                 "expected_light": exp_light, "observed_heavy": observed_heavy, "observed_classes": {},
                 "holders_by_gpu": {},
                 "observed_light": sorted(set(exp_heavy + exp_light) - set(observed_heavy)),
                 "gpus_out_of_place": wrong, "memory_mib": {int(g): round(float(m), 0) for g, m in zip(mem["gpu"], mem["m"], strict=True)},
                 "processes": {}}))
        return findings.frame(rows)

    def restarts_never_came_up(self, grace_s: float | None = None) -> pd.DataFrame:
        grace = float(grace_s if grace_s is not None else self.config.detect.get("restart_grace_s", GRACE_S))
        df = self._df(f"""
            WITH launch AS (
                SELECT host, epoch_us(time) AS us, ref, message FROM events
                WHERE kind = 'launch' AND host IS NOT NULL AND time IS NOT NULL
            ), fleet_end AS (SELECT max(b) AS b FROM fleet_gpu_minutes)
            SELECT l.host, l.us, l.ref, l.message,
                   (SELECT max(g.mem_max) FROM fleet_gpu_minutes g WHERE g.host = l.host AND g.b > l.us // {self.bucket_s * _US})
                       AS mem_after,
                   (SELECT max(g.b) FROM fleet_gpu_minutes g WHERE g.host = l.host) AS host_last_b,
                   (SELECT sum(t.lines) FROM fleet_host_tok t WHERE t.host = l.host AND t.last_us > l.us) AS lines_after,
                   (SELECT max(t.last_us) FROM fleet_host_tok t WHERE t.host = l.host AND t.last_us <= l.us) AS last_step_us,
                   (SELECT b FROM fleet_end) AS fleet_last_b
            FROM launch l ORDER BY l.host, l.us
        """)
        rows = []
        for r in df.itertuples():
            start = _time(r.us)
            end = self._t(r.fleet_last_b + 1)
            watched = (end - start).total_seconds()
            came_up = (pd.notna(r.mem_after) and r.mem_after >= HELD_MIB) or (pd.notna(r.lines_after) and r.lines_after > 0)
            if came_up or watched < grace:
                continue  # came up, or too early to tell
            silent = pd.isna(r.mem_after)
            mem = None if silent else float(r.mem_after)
            last_step = _time(r.last_step_us)
            rows.append(findings.finding(
                "restart_never_came_up", start, end, "critical", [r.ref] if isinstance(r.ref, str) else [],
                {"host": r.host, "relaunch": start, "last_step_time": last_step, "minutes_watched": round(watched / 60, 1),
                 "gpu_memory_after_mib": mem, "step_lines_after": 0, "command": r.message}))
        return findings.frame(rows)

    def detect(self) -> pd.DataFrame:
        """Every fleet detector's findings, ordered by start."""
        parts = [self.stragglers(), self.gpu_errors(), self.idle_allocated(), self.role_drift(),
                 self.restarts_never_came_up()]
        parts = [p for p in parts if len(p)]
        return findings.frame([r for p in parts for r in p.to_dict("records")]) if parts else findings.empty()

    # -- helpers -------------------------------------------------------------------------------
    def _min_minutes(self, minutes: float | None) -> float:
        return float(minutes if minutes is not None else self.config.detect.get("roles_min_minutes", MIN_MINUTES))

    def _gpu_refs(self, host: str, gpu: int | None, at: pd.Timestamp, silent: bool = False) -> list[str]:
        """The capture that shows it: `file:line` of the first sample at or after `at` where the
        view keeps lines (registered frames), else the capture's path (the store keeps none)."""
        has_line = "line" in self._columns("gpus")
        where = "host = $1 AND time >= $2" + (" AND gpu = $3" if gpu is not None else "")
        if silent:
            where += " AND util_gpu_pct IS NULL AND memory_used_mib IS NULL"
        params = [host, at] + ([gpu] if gpu is not None else [])
        cols = "source, arg_min(line, time)" if has_line else "source, NULL"
        # Bounded to an hour after: the scan reads one partition, not the whole store.
        got = self.con.execute(f"SELECT {cols} FROM gpus WHERE {where} AND time < $2 + INTERVAL 1 HOUR "
                               f"GROUP BY source", params).fetchall()
        return [f"{s}:{int(n)}" if n is not None else s for s, n in got if s]

    def _log_refs(self, host: str) -> list[str]:
        got = self._df("SELECT source FROM fleet_source_host WHERE host = $1 ORDER BY source LIMIT 1", [host])
        return got["source"].tolist()


# A fleet finding an incident's own findings already tell, host by host: the kinds that tell it.
_TOLD_AS = {
    "restart_never_came_up": ("failed_restart", "never_trained", "slow_start"),
    "idle_allocated_gpu": ("idle_allocated_gpu",),
    "role_mismatch": ("role_mismatch",),
}


# What a fleet finding of one GPU explains on its host when it began with it.
_EXPLAINS = {"straggler": ("throughput_regression",), "gpu_error": ("training_died", "stall")}


def registered(inc: Incident) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with one view per frame of the incident (no copy: pandas frames are
    scanned where they are)."""
    con = duckdb.connect()
    for name in FRAME_NAMES:
        con.register(name, getattr(inc, name))
    return con


def told_with_fleet(inc: Incident, told: pd.DataFrame) -> pd.DataFrame:
    """The incident's own findings (`told`: each host judged on its own) and the fleet's that they
    do not tell already (a GPU setting its host's pace, a GPU lost, ...), in time order; a host's
    throughput drop is linked to the GPU that set its pace then."""
    found = Fleet(registered(inc), config=inc.config).detect()
    if found.empty:
        return told
    rows = told.to_dict("records")
    for f in found.to_dict("records"):
        host = f["numbers"].get("host")
        if any(_same_story(f, r, host) for r in rows):
            continue
        f["id"] = f"{f['id']}@{host}"
        rows.append(f)
        if f["numbers"].get("gpu") is None:
            continue
        for r in rows:
            # what one GPU did to its host's job as it began: a drop, a death, a stall
            if (r["kind"] in _EXPLAINS.get(f["kind"], ()) and r["numbers"].get("host") == host
                    and f["start"] - pd.Timedelta(seconds=2 * BUCKET_S) <= r["start"] <= _end(f)):
                r["caused_by"] = [*r["caused_by"], findings.cause(f["id"], f["title"], f["evidence"][:1])]
    return findings.frame(sorted(rows, key=lambda r: r["start"]))


def _same_story(fleet_finding: dict, own: dict, host) -> bool:
    if own["kind"] not in _TOLD_AS.get(fleet_finding["kind"], ()) or own["numbers"].get("host") != host:
        return False
    gpu = fleet_finding["numbers"].get("gpu")
    if gpu is not None and own["numbers"].get("gpu") not in (None, gpu):
        return False
    return own["start"] <= _end(fleet_finding) and fleet_finding["start"] <= _end(own)


def _end(f: dict) -> pd.Timestamp:
    return f["end"] if pd.notna(f["end"]) else f["start"]
