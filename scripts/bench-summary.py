#!/usr/bin/env python3
"""The 32GiB shape's bench runs of a results directory as one markdown table.

    scripts/bench-summary.py DIR

Reads every `cuzk bench` log under DIR that scripts/gpu-msm.sh (`bench-NAME.log`,
`timeline-NAME.csv`, `waterfall-NAME.txt`) or scripts/gpu-cards.sh (`gm-CARD/bench-32GiB.log`
and its timeline and waterfall beside it) left there, and prints a row per run: the bench's
seconds per sector (steady and wall), the mean time between two partitions' proofs over the
last 15, the GPU call and its steps per partition (means over the run's `GPU_END` rows), the
bytes over PCIe per partition, what a partition holds in flight and at its prover, the peak
host memory, and the waterfall's verdict. Standard library only.
"""
import csv
import glob
import os
import re
import statistics
import sys


def runs(root):
    """(name, bench log, timeline, waterfall) for each run found under `root`."""
    found = []
    for log in sorted(glob.glob(os.path.join(root, "**", "bench-*.log"), recursive=True)):
        folder, base = os.path.split(log)
        stem = base[len("bench-"):-len(".log")]
        if stem == "32GiB":  # gpu-cards.sh: the folder names the card
            name = os.path.basename(folder)
            timeline = os.path.join(folder, "timeline-bench-32GiB.csv")
            waterfall = os.path.join(folder, "waterfall-bench-32GiB.txt")
        else:
            name = stem
            timeline = os.path.join(folder, f"timeline-{stem}.csv")
            waterfall = os.path.join(folder, f"waterfall-{stem}.txt")
        found.append((name, log, timeline, waterfall))
    return found


def bench_figures(log):
    text = open(log, errors="replace").read()

    def number(pattern):
        m = re.search(pattern, text)
        return float(m.group(1)) if m else None

    return {
        "wall": number(r"wall time +[0-9.]+ s \(([0-9.]+) s per sector"),
        "steady": number(r"; ([0-9.]+) s per sector steady"),
        "in_flight": re.search(r"per partition in flight +([0-9.]+ [KMG]B)", text),
        "at_prover": re.search(r"at the prover, ([0-9.]+ [KMG]B) each while there", text),
        "peak": re.search(r"peak memory in use +([0-9.]+ GB)", text),
    }


def detail(row):
    return dict(kv.split("=", 1) for kv in row["detail"].split(";") if "=" in kv)


def timeline_figures(path):
    if not os.path.exists(path):
        return None
    rows = list(csv.DictReader(open(path)))
    starts, calls, ends, steps = {}, [], [], []
    for r in rows:
        key = (r["job"], r["partition"])
        if r["event"] == "GPU_START":
            starts[key] = float(r["t_ms"])
        elif r["event"] == "GPU_END":
            t = float(r["t_ms"])
            ends.append(t)
            if key in starts:
                calls.append(t - starts[key])
            steps.append(detail(r))
    if not ends:
        return None
    last = ends[-16:]

    def mean(key):
        values = [float(s[key]) for s in steps if key in s]
        return statistics.mean(values) / 1e3 if values else None

    return {
        "proofs": len(ends),
        "interval": (last[-1] - last[0]) / (len(last) - 1) / 1e3 if len(last) > 1 else None,
        "call": statistics.mean(calls[-15:]) / 1e3 if calls else None,
        "h": mean("h_ms"),
        "fft": mean("fft_ms"),
        "lab": [mean(k) for k in ("l_ms", "a_ms", "b_g1_ms", "msm_g2_ms")],
        "pcie": mean("pcie_mb"),  # MB / 1e3: GB
    }


def verdict(path):
    if not os.path.exists(path):
        return "-"
    for line in open(path, errors="replace"):
        if line.startswith("verdict:"):
            return line[len("verdict:"):].strip().split(":")[0]
    return "-"


def group(match):
    return match.group(1) if match else "-"


def show(value, digits=2, unit=""):
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print("| run | s/sector steady (bench) | wall per sector | interval, last 15 | GPU call | H | fft "
          "| L / A / B G1 / B G2 | over PCIe per partition | in flight | at the prover | "
          "peak host memory | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, log, timeline, waterfall in runs(sys.argv[1]):
        b = bench_figures(log)
        t = timeline_figures(timeline) or {}
        lab = " / ".join(show(v) for v in t.get("lab", [])) or "-"
        print(f"| {name} | {show(b['steady'], 1)} | {show(b['wall'], 1)} "
              f"| {show(t.get('interval'), 2, ' s')} | {show(t.get('call'), 2, ' s')} "
              f"| {show(t.get('h'), 2, ' s')} | {show(t.get('fft'), 2, ' s')} | {lab} "
              f"| {show(t.get('pcie'), 1, ' GB')} | {group(b['in_flight'])} "
              f"| {group(b['at_prover'])} | {group(b['peak'])} | {verdict(waterfall)} |")


if __name__ == "__main__":
    main()
