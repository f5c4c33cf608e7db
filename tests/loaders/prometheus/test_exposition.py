"""The line grammar of Prometheus' text formats: sample lines as exporters and promtool write
them, label values with escapes, OpenMetrics' exemplars and special values, `tsdb dump` lines."""

from __future__ import annotations

import math

from dflash_postmortem.loaders.prometheus import exposition as X


def test_a_dcgm_sample_line_with_spaces_after_the_commas():
    s = X.parse_sample('DCGM_FI_DEV_SM_CLOCK{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 139')
    assert (s.name, s.labels, s.value, s.timestamp) == (
        "DCGM_FI_DEV_SM_CLOCK", {"gpu": "0", "UUID": "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"}, 139.0, None)


def test_label_values_keep_escaped_quotes_backslashes_newlines_and_braces():
    s = X.parse_sample(r'm{err_msg="GPU \"lost\" {bus}",path="C:\\x",text="a\nb"} 1 1700000000000')
    assert s.labels == {"err_msg": 'GPU "lost" {bus}', "path": "C:\\x", "text": "a\nb"}
    assert s.timestamp == 1700000000000.0 and not s.fractional


def test_a_hash_or_a_brace_inside_a_label_value_is_part_of_it():
    s = X.parse_sample('DCGM_FI_DEV_XID_ERRORS{gpu="1",err_msg="see #79 {fallen off}"} 79')
    assert s.labels["err_msg"] == "see #79 {fallen off}" and s.value == 79.0
    assert X.split_sample('m{a="x"} 1 2') == ("m", 'a="x"', "1", "2")


def test_openmetrics_timestamps_in_seconds_and_exemplars():
    s = X.parse_sample('up{instance="localhost:8000",job="example2"} 1 1700226034.330')
    assert s.timestamp == 1700226034.33 and s.fractional
    s = X.parse_sample('rpc_bucket{le="0.5"} 7 # {trace_id="KOO5S4vxi0o"} 0.67')
    assert s.value == 7.0 and s.timestamp is None


def test_special_values():
    assert X.parse_sample('m{le="+Inf"} +Inf').value == math.inf
    assert X.parse_sample("m -Inf").value == -math.inf
    assert math.isnan(X.parse_sample("m NaN").value)
    assert X.parse_sample("node_boot_time_seconds 1.418183276e+09").value == 1418183276.0


def test_lines_that_are_not_samples():
    for line in ("curl localhost:9400/metrics", "...", "```", 'm{gpu="0" 5', 'm{gpu="0"}', "m 12 13 14",
                 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-'):
        assert X.parse_sample(line) is None, line
    assert X.LOOKS_LIKE_SAMPLE.match('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-')
    assert not X.LOOKS_LIKE_SAMPLE.match("curl localhost:9400/metrics")


def test_promtool_tsdb_dump_lines():
    s = X.parse_dump_line('{__name__="heavy_metric", foo="foo"} 4 60000')
    assert (s.name, s.labels, s.value, s.timestamp) == ("heavy_metric", {"foo": "foo"}, 4.0, 60000.0)
    assert X.parse_dump_line('{foo="foo"} 4 60000') is None  # no metric name
    assert X.parse_dump_line('{__name__="m"} 4') is None  # a dump always writes the time
