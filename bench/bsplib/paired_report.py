#!/usr/bin/env python3
"""bench/bsplib/paired_report.py -- the "same processes" table of
bench/bsplib_bench.sh, from paired_bench's csv lines.

Input (--raw): lines "provider,round,csv-fields..." where the csv fields are
paired_bench's (bench/bsplib/paired_bench.c):
  paired,<quantity>,<p>,<h>,<bspk s>,<mpi s>,<ratio>,<pair median>,<pair min>,<pair max>,<pairs>,<ok>
  (quantity sync, put, expect, and sync-loop, put-loop, expect-loop: the
  same of the chunks' loop averages)
  paired,fit,<p>,<points>,<bspk g>,<mpi g>,<g ratio>,<bspk l>,<mpi l>,0,0,<ok>
  paired,roundtrip,<p>,0,<min s>,<median s>,<max s>,0,0,0,<pairs>,1
Output: Markdown on stdout (appended to tables.md by the script): per
provider and p, the goal rows of issue 11 measured with both libraries in the
same processes. A cell is the median over rounds; the ratio column is the
median over rounds of each round's ratio of medians, with the range over
rounds of the pair-by-pair ratios in brackets (min of the minima .. max of
the maxima): how far apart two chunks a few milliseconds apart can be.
"""
import argparse
import collections
import statistics


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    args = ap.parse_args()
    rows = collections.defaultdict(list)  # (prov, p, quantity, h) -> [fields]
    bad = 0
    with open(args.raw) as f:
        for line in f:
            v = line.strip().split(",")
            if len(v) != 14 or v[2] != "paired":
                continue
            prov, q, p, h = v[0], v[3], int(v[4]), int(v[5])
            nums = [float(x) for x in v[6:13]]
            ok = int(v[13])
            bad += ok == 0
            rows[(prov, p, q, h)].append(nums + [ok])
    if not rows:
        return
    med = statistics.median

    def us(x):
        x *= 1e6
        return f"{x:.3g}"

    out = ["## Same processes, interleaved (paired_bench)", "",
           "BSPlib on BSPk and Open MPI in the same processes under mpirun, measured in alternating chunks "
           "of a few hundred supersteps (bench/bsplib/paired_bench.c), so that both see the same placement "
           "of the cores at the same moment. Cell: median over rounds; ratio: median over rounds of "
           "BSPk / MPI, [range of the pair-by-pair ratios].", ""]
    for prov, p in sorted({(k[0], k[1]) for k in rows}):
        def cell(q, h):
            r = rows.get((prov, p, q, h))
            if not r:
                return None
            return (med(x[0] for x in r), med(x[1] for x in r), med(x[2] for x in r),
                    min(x[4] for x in r), max(x[5] for x in r), len(r), all(x[7] for x in r))

        out += [f"### {prov}, p = {p}", "",
                "| quantity | BSPk (BSPlib) | Open MPI | BSPk / MPI [pairs] | goal |", "|---|---:|---:|---:|---|"]
        s = cell("sync", 0)
        if s:
            out.append(f"| empty bsp_sync / MPI_Barrier, us | {us(s[0])} | {us(s[1])} | "
                       f"{s[2]:.2f} [{s[3]:.2f}-{s[4]:.2f}] | <= 1.0 |")
        s = cell("sync-loop", 0)
        if s:
            out.append(f"| the same, loop averages, us | {us(s[0])} | {us(s[1])} | "
                       f"{s[2]:.2f} [{s[3]:.2f}-{s[4]:.2f}] | |")
        fit = next((v for k, v in rows.items() if k[:3] == (prov, p, "fit")), None)
        if fit:
            gb, gm = med(x[0] for x in fit), med(x[1] for x in fit)
            gr = med(x[2] for x in fit)
            lb, lm = med(x[3] for x in fit), med(x[4] for x in fit)
            out.append(f"| g per bsp_put / MPI_Put (+ fence), us/word | {gb * 1e6:.3g} | {gm * 1e6:.3g} | {gr:.2f} | <= 1.0 |")
            out.append(f"| l of that fit, us | {us(lb)} | {us(lm)} | - | |")
        e = cell("expect", p)
        if e:
            out.append(f"| h = p: puts + bspk_expect + bsp_sync / puts + fence, us | {us(e[0])} | {us(e[1])} | "
                       f"{e[2]:.2f} [{e[3]:.2f}-{e[4]:.2f}] | <= 0.5 |")
        e = cell("expect-loop", p)
        if e:
            out.append(f"| the same, loop averages, us | {us(e[0])} | {us(e[1])} | "
                       f"{e[2]:.2f} [{e[3]:.2f}-{e[4]:.2f}] | |")
        hs = sorted(k[3] for k in rows if k[:3] == (prov, p, "put"))
        for h in hs:
            c = cell("put", h)
            out.append(f"| T(h = {h}) puts, us | {us(c[0])} | {us(c[1])} | {c[2]:.2f} [{c[3]:.2f}-{c[4]:.2f}] | |")
        rt = rows.get((prov, p, "roundtrip", 0))
        if rt:
            out.append(f"| core round trip pid 0 - pid 1, us (not a goal) | "
                       f"{us(med(x[1] for x in rt))} ({us(min(x[0] for x in rt))}-{us(max(x[2] for x in rt))}) | | | |")
        nr = len(rows.get((prov, p, "sync", 0), []))
        out += ["", f"({nr} round(s).)", ""]
    if bad:
        out.append(f"**{bad} paired measurement(s) had words wrong or missing.**")
    print("\n".join(out))


if __name__ == "__main__":
    main()
