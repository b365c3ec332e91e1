#!/usr/bin/env python3
"""Summarises a gpu-bench.sh log directory as a markdown table (standard library only)."""
import csv
import glob
import json
import os
import re
import statistics
import sys

logs = sys.argv[1]


def read_times():
    runs = {}
    for line in open(os.path.join(logs, "times.txt")):
        parts = line.split()
        if len(parts) == 2 and "=" not in parts[1]:
            runs[parts[0]] = {"value": parts[1]}
            continue
        fields = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        runs[parts[0]] = fields
    return runs


def timeline_stats(name):
    path = os.path.join(logs, f"timeline-{name}.csv")
    if not os.path.exists(path):
        return None
    rows = list(csv.DictReader(open(path)))
    start, spans, synth, steps = {}, {}, [], {"fft_ms": [], "msm_g1_ms": [], "msm_g2_ms": [], "cpu_ms": []}
    for r in rows:
        key = (r["job"], r["partition"])
        t = float(r["t_ms"])
        if r["event"] in ("GPU_START", "SYNTH_START"):
            start[(r["event"], key)] = t
        elif r["event"] == "SYNTH_END":
            synth.append(t - start[("SYNTH_START", key)])
        elif r["event"] == "GPU_END":
            spans.setdefault(r["worker"], []).append((start[("GPU_START", key)], t))
            for kv in r["detail"].split(";"):
                k, _, v = kv.partition("=")
                if k in steps:
                    steps[k].append(float(v))
    if not spans:
        return None
    all_spans = [s for v in spans.values() for s in v]
    window = (min(s for s, _ in all_spans), max(e for _, e in all_spans))
    busy = {}
    for worker, v in spans.items():
        # A batch (SupraSeal, one partition per GPU per call) overlaps itself: count the union.
        covered, reach = 0.0, float("-inf")
        for s, e in sorted(v):
            if e > reach:
                covered += e - max(s, reach)
                reach = e
        busy[worker] = covered / (window[1] - window[0])
    prove = [e - s for s, e in all_spans]
    return {
        "busy": busy,
        "prove_ms": statistics.mean(prove),
        "synth_ms": statistics.mean(synth) if synth else float("nan"),
        "steps": {k: statistics.mean(v) for k, v in steps.items() if v},
        "window_s": (window[1] - window[0]) / 1e3,
        "proofs": len(all_spans),
    }


def smi_mean(name):
    path = os.path.join(logs, f"smi-{name}.csv")
    if not os.path.exists(path):
        return None
    utils = {}
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[2].isdigit():
            utils.setdefault(parts[1], []).append(int(parts[2]))
    # Mean over the samples where the GPU was in use at all, i.e. the proving window.
    return {gpu: statistics.mean([u for u in v if u > 0] or [0]) for gpu, v in utils.items()}


def waterfall_json(name):
    """Steady-state s/proof, NVML kernel busy (of the run, of the provers' busy time) and the verdict."""
    path = os.path.join(logs, f"metrics-{name}.json")
    try:
        run = json.load(open(path))["runs"][-1]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    kernels = run.get("gpu_kernels") or {}
    return {
        "steady": (run.get("throughput") or {}).get("seconds_per_proof"),
        "kernels_run": kernels.get("run_fraction"),
        "kernels_proving": kernels.get("proving_fraction"),
        "verdict": run.get("verdict", {}).get("text", ""),
    }


def bellperson_prover_times():
    path = os.path.join(logs, "reference.log")
    times = []
    for line in open(path) if os.path.exists(path) else []:
        m = re.search(r"prover time: ([0-9.]+)(ms|s)", line)
        if m:
            times.append(float(m.group(1)) * (1 if m.group(2) == "ms" else 1e3))
    return times


runs = read_times()
print(f"machine: {open(os.path.join(logs, 'nvidia-smi.txt')).read().count('H200')} x H200 listed by nvidia-smi, "
      f"{open(os.path.join(logs, 'nproc.txt')).read().strip()} cores; "
      f"2KiB params generated in {runs.get('params_2kib_s', {}).get('value', '?')} s")
print()
print("| run | proofs | wall s | s/proof | steady s/proof (waterfall) | prover busy (timeline) | GPU kernels (NVML): run / provers busy | GPU util (nvidia-smi, busy samples) | synth s/partition | prove s/partition |")
print("|---|---|---|---|---|---|---|---|---|---|")
ref_sp = None
for name, fields in runs.items():
    if name in ("params_2kib_s", "params_8mib_s", "constraints_2kib_s", "total_s"):
        continue
    proofs = int(fields.get("proofs", 0) or 0)
    wall = float(fields.get("wall_s", "nan"))
    sp = wall / proofs if proofs else float("nan")
    if name == "reference":
        ref_sp = sp
    t = timeline_stats(name)
    smi = smi_mean(name)
    busy = ", ".join(f"{w} {b:.0%}" for w, b in sorted(t["busy"].items())) if t else "-"
    util = ", ".join(f"gpu{g} {u:.0f}%" for g, u in sorted(smi.items())) if smi else "-"
    synth = f"{t['synth_ms'] / 1e3:.2f}" if t else "-"
    prove = f"{t['prove_ms'] / 1e3:.2f}" if t else "-"
    w = waterfall_json(name)
    steady = f"{w['steady']:.3f}" if w and w["steady"] else "-"
    kern = (f"{w['kernels_run']:.0%} / {w['kernels_proving']:.0%}"
            if w and w["kernels_run"] is not None and w["kernels_proving"] is not None else "-")
    print(f"| {name} (rc {fields.get('rc')}) | {proofs} | {wall:.1f} | {sp:.2f} | {steady} | {busy} | {kern} | {util} | {synth} | {prove} |")
print()
print()
for name in runs:
    w = waterfall_json(name)
    if w and w["verdict"]:
        print(f"- verdict, {name}: {w['verdict']}")
print()
# Each cuzk run against seal_commit_phase2, by wall time per proof.
for name, fields in runs.items():
    proofs = int(fields.get("proofs", 0) or 0)
    if ref_sp and name != "reference" and proofs:
        print(f"- {name} vs seal_commit_phase2: {ref_sp / (float(fields['wall_s']) / proofs):.2f}x by wall time")
first = next((n for n in ("supraseal", "default", "ecgpu") if n in runs and timeline_stats(n)), None)
bp = bellperson_prover_times()
if bp and first:
    print(f"GPU phase per partition: bellperson create_proof_batch 'prover time' mean {statistics.mean(bp) / 1e3:.3f} s "
          f"(n={len(bp)}); cuzk {first} GPU_START..GPU_END mean {timeline_stats(first)['prove_ms'] / 1e3:.3f} s")
# Step timings exist only where the prover reports them (ec-gpu, CPU); SupraSeal's are zero.
for name in runs:
    t = timeline_stats(name)
    if t and any(v > 0 for v in t["steps"].values()):
        print(f"cuzk prover steps (mean ms per partition, {name}): " +
              ", ".join(f"{k} {v:.1f}" for k, v in t["steps"].items()))
