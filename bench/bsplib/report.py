#!/usr/bin/env python3
"""bench/bsplib/report.py -- the tables of bench/bsplib_bench.sh.

Input (--raw): lines "provider,round,library,kind,variant,p,h,a,b,reps,ok"
(bench/bsplib/bench_common.h describes the fields after round).
Output (--out DIR), per provider and p:
  tables.md          BSPk (the BSPlib layer) next to Open MPI, with the ratio
                     BSPk / MPI (below 1: BSPk is faster), then T(h) per h
                     (puts, and their mirror: gets, bsp_get vs MPI_Get + fence);
  bsplib_bench.csv   the summary rows of those tables;
  raw.csv            every measurement, with a header line.
A cell is the median over rounds. Times: per repetition the slowest process,
median over repetitions; rows marked "loop average": the timed loop's time
per repetition, slowest process (what a program of such supersteps takes per
superstep: under bspk_expect, and with more processes than cores, processes
are not in lock-step and one repetition's slowest process is not the loop's,
as bench/suite.sh reports both; bspbench's T(h) is such a loop average, pid 0's);
g and l: least-squares fit of T(h) = g h + l, from the programs' fit lines
(medians), and "loop-average fit" rows fitted here over the loop averages; when one side has none because its run ended early
(bsplib_bench.sh's time limit: Open MPI's osc pt2pt over TCP with 4
processes on 2 cores has taken minutes at h = 2048 here), both sides are
fitted over the h they both measured, and the row says so ("[fit h <= H]");
and when some round of a side did not measure everything (a failure or a
time-out), a line under its table says how many rounds did.
Flop figures use one r per provider and p (the median of every r measured
there, by both programs), so their ratios are the microsecond ratios.
"""
import argparse
import collections
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import rawlines  # noqa: E402  (bench/rawlines.py)

FIELDS = ["provider", "round", "library", "kind", "variant", "p", "h", "a", "b", "reps", "ok"]


def load(path):
    return rawlines.load(path, FIELDS, ("round", "p", "h", "reps", "ok"), ("a", "b"))


def fmt(x, scale=1e6):
    if x is None:
        return "-"
    x *= scale
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def ratio(a, b):
    if a is None or b is None or a <= 0 or b <= 0:
        return "-"
    r = a / b
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"  # (small ratios: two significant digits, not 0.00)


def lsq(h, t):
    """Least-squares (g, l) of t = g h + l (bench_common.h's bb_fit)."""
    n = len(h)
    sh, st = sum(h), sum(t)
    shh, sht = sum(x * x for x in h), sum(x * y for x, y in zip(h, t))
    den = n * shh - sh * sh
    g = (n * sht - sh * st) / den if den else 0.0
    return g, (st - g * sh) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = load(args.raw)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "raw.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        w.writerows(rows)

    # (provider, p, library, kind, variant, h) -> medians over rounds of a and b; ok = all ok
    groups = collections.defaultdict(list)
    for r in rows:
        groups[(r["provider"], r["p"], r["library"], r["kind"], r["variant"], r["h"])].append(r)
    cell = {}
    for key, rs in groups.items():
        cell[key] = (statistics.median(r["a"] for r in rs), statistics.median(r["b"] for r in rs),
                     all(r["ok"] for r in rs), len(rs))

    def get(prov, p, lib, kind, variant, h=None, which=0):
        if h is None:  # fit lines carry the point count in h: take whichever there is
            for key, v in cell.items():
                if key[:5] == (prov, p, lib, kind, variant):
                    return v[which]
            return None
        v = cell.get((prov, p, lib, kind, variant, h))
        return v[which] if v else None

    bad = sorted({(k[0], k[1], k[2], k[4], k[5]) for k, v in cell.items() if not v[2]})
    md, summary = [], []
    for prov, p in sorted({(k[0], k[1]) for k in cell}, key=lambda x: (x[0] != "shm", x[0], x[1])):
        rates = [r["a"] for r in rows if r["provider"] == prov and r["p"] == p and r["kind"] == "rate"]
        rate = statistics.median(rates) if rates else None
        rounds = max((v[3] for k, v in cell.items() if k[0] == prov and k[1] == p), default=0)
        B = lambda *a, **k: get(prov, p, "bsplib", *a, **k)
        M = lambda *a, **k: get(prov, p, "mpi", *a, **k)
        table = []  # (label, unit, bspk, mpi, scale)

        def both(label, unit, b, m, scale):
            table.append((label, unit, b, m, scale))

        both("r, DAXPY (machine-state check)", "Mflop/s", B("rate", "daxpy", 0), M("rate", "daxpy", 0), 1e-6)
        both("empty bsp_sync vs MPI_Barrier", "us", B("time", "sync", 0), M("time", "barrier", 0), 1e6)
        both("empty bsp_sync vs empty MPI_Win_fence", "us", B("time", "sync", 0), M("time", "fence", 0), 1e6)
        both("empty bsp_sync vs MPI_Barrier, loop average", "us", B("time", "sync", 0, which=1),
             M("time", "barrier", 0, which=1), 1e6)
        def fits(bv, mv):
            """(g, l) of both sides, from the programs' fit lines; when a side
            has none (its run ended early: a time-out or a crash), both sides fitted here
            over the h they both measured (medians over rounds), and a note."""
            b, m = (B("fit", bv), B("fit", bv, which=1)), (M("fit", mv), M("fit", mv, which=1))
            if b[0] is not None and m[0] is not None:
                return b, m, ""
            hs = sorted({k[5] for k in cell if k[:5] == (prov, p, "bsplib", "time", bv)} &
                        {k[5] for k in cell if k[:5] == (prov, p, "mpi", "time", mv)})
            if len(hs) < 3:
                return b, m, ""
            return (lsq(hs, [B("time", bv, h) for h in hs]), lsq(hs, [M("time", mv, h) for h in hs]),
                    f" [fit h <= {hs[-1]}]")

        put_fit = fits("put", "put")  # (g rows and the l row)
        for v, name in (("put", "bsp_put"), ("hpput", "bsp_hpput"), ("send", "bsp_send")):
            (gb, _), (gm, _), note = put_fit if v == "put" else fits(v, "put")
            both(f"g per {name} vs per MPI_Put (+ fence){note}", "us/word", gb, gm, 1e6)
            if rate:
                both(f"g per {name} vs per MPI_Put, flops{note}", "flop/word",
                     gb * rate if gb is not None else None, gm * rate if gm is not None else None, 1)
        (gb, _), (gm, _), note = fits("get", "get")  # "-" for csv from before the get variant
        both(f"g per bsp_get vs per MPI_Get (+ fence){note}", "us/word", gb, gm, 1e6)
        if rate:
            both(f"g per bsp_get vs per MPI_Get, flops{note}", "flop/word",
                 gb * rate if gb is not None else None, gm * rate if gm is not None else None, 1)
        (_, lb), (_, lm), note = put_fit
        both(f"l (put fit) vs l (put + fence fit){note}", "us", lb, lm, 1e6)
        if rate:
            both(f"l (put fit) vs l (put + fence fit), flops{note}", "flop",
                 lb * rate if lb is not None else None, lm * rate if lm is not None else None, 1)
        # bspbench's own measure: T(h) is the time of NITERS consecutive
        # supersteps divided by NITERS (pid 0's loop), and g and l come from
        # the fit over those. Here: the loop averages (slowest process) fitted
        # over the h both sides measured.
        def loop_fit(bv, mv):
            hs = sorted({k[5] for k in cell if k[:5] == (prov, p, "bsplib", "time", bv)} &
                        {k[5] for k in cell if k[:5] == (prov, p, "mpi", "time", mv)})
            if len(hs) < 3:
                return (None, None), (None, None)
            tb = [B("time", bv, h, which=1) for h in hs]
            tm = [M("time", mv, h, which=1) for h in hs]
            if None in tb or None in tm:
                return (None, None), (None, None)
            return lsq(hs, tb), lsq(hs, tm)
        for v, name, mv in (("put", "bsp_put", "put"), ("hpput", "bsp_hpput", "put"), ("send", "bsp_send", "put"),
                            ("get", "bsp_get", "get")):
            (gb, _), (gm, _) = loop_fit(v, mv)
            both(f"g per {name} vs per MPI_{'Get' if mv == 'get' else 'Put'} (+ fence), loop-average fit",
                 "us/word", gb, gm, 1e6)
        (_, lb), (_, lm) = loop_fit("put", "put")
        both("l (put fit) vs l (put + fence fit), loop-average fit", "us", lb, lm, 1e6)
        both(f"h = p = {p}: puts + bspk_expect + bsp_sync vs puts + fence", "us",
             B("time", "put-expect", p), M("time", "put", p), 1e6)
        both(f"h = p = {p}: puts + bsp_sync (no declaration) vs puts + fence", "us",
             B("time", "put", p), M("time", "put", p), 1e6)
        both(f"h = p = {p}: puts + bspk_expect + bsp_sync vs puts + fence, loop average", "us",
             B("time", "put-expect", p, which=1), M("time", "put", p, which=1), 1e6)

        md.append(f"### {prov}, p = {p}" + (f" ({rounds} rounds, median)" if rounds > 1 else ""))
        md.append("")
        md.append("| quantity | unit | BSPk (BSPlib) | Open MPI | BSPk / MPI |")
        md.append("|---|---|---:|---:|---:|")
        for label, unit, b, m, scale in table:
            md.append(f"| {label} | {unit} | {fmt(b, scale)} | {fmt(m, scale)} | {ratio(b, m)} |")
            summary.append([prov, p, label, unit, f"{b * scale:.6g}" if b is not None else "",
                            f"{m * scale:.6g}" if m is not None else "",
                            f"{b / m:.4f}" if b and m and b > 0 and m > 0 else ""])
        md.append("")
        if rate:
            md.append(f"Flop figures at r = {rate * 1e-6:,.0f} Mflop/s (median of both programs' r).")
        md.append("Goals to read off the ratio column: empty bsp_sync <= 1.0 x MPI_Barrier; "
                  "g per bsp_put <= 1.0 x MPI_Put; h = p with bspk_expect <= 0.5 x puts + fence. "
                  "Loop average (and loop-average fit): the timed loop's time per superstep, slowest process "
                  "-- what bspbench measures (its T(h) is pid 0's time for NITERS supersteps / NITERS); "
                  "the other rows: per repetition the slowest process, median over repetitions (stricter "
                  "when processes are not in lock-step: more processes than cores, or bspk_expect).")
        for lib, who in (("bsplib", "BSPk"), ("mpi", "Open MPI")):  # runs that failed or timed out
            per_round = collections.defaultdict(set)  # round -> its measurements
            for r in rows:
                if r["provider"] == prov and r["p"] == p and r["library"] == lib:
                    per_round[r["round"]].add((r["kind"], r["variant"], r["h"]))
            every = set().union(*per_round.values()) if per_round else set()
            done = sum(1 for m in per_round.values() if m == every)
            if rounds > 1 and done < rounds:
                md.append(f"{who}: {done} of the {rounds} rounds measured everything here (the others failed or "
                          f"timed out, bsplib_bench.sh said which); its cells are the medians of what was measured.")
        md.append("")

        hs = sorted({k[5] for k in cell if k[0] == prov and k[1] == p and k[3] == "time"
                     and k[4] in ("put", "hpput", "send", "get")})
        md.append(f"T(h) in us, {prov}, p = {p} (slowest process, median over repetitions):")
        md.append("")
        md.append("| h | bsp_put | bsp_hpput | bsp_send | MPI_Put + fence | bsp_put / MPI "
                  "| bsp_get | MPI_Get + fence |")
        md.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for h in hs:
            tb, tm = B("time", "put", h), M("time", "put", h)
            md.append(f"| {h} | {fmt(tb)} | {fmt(B('time', 'hpput', h))} | {fmt(B('time', 'send', h))} "
                      f"| {fmt(tm)} | {ratio(tb, tm)} | {fmt(B('time', 'get', h))} | {fmt(M('time', 'get', h))} |")
        md.append("")

    if bad:
        md.append("**Verification failed** (data missing or wrong) in: " +
                  "; ".join(f"{pr} p={p} {lib} {v} h={h}" for pr, p, lib, v, h in bad))
        md.append("")
    text = "\n".join(md)
    with open(os.path.join(args.out, "tables.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "bsplib_bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["provider", "p", "quantity", "unit", "bspk", "mpi", "bspk_over_mpi"])
        w.writerows(summary)
    print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
