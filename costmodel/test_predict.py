#!/usr/bin/env python3
"""Tests of costmodel/bspk-predict.

Run:  python3 costmodel/test_predict.py      (exit status non-zero on failure)

Every test builds its inputs in a temporary directory: a machine file with
known coefficients for the nine cost functions of Bianco & Pucci in the three
modes, and the profile of a P = 3 run over 7 supersteps (expect, counted,
will_send and finalize; one superstep without communication). The end times
(end_s, one host's clock) are chosen so that the superstep time T = max_p end_s
- max_p end_s of the superstep before (the first superstep: the last start, max_p (end_s - wall_s)), less
w = max_p w_s, is exactly the prediction of F_io in its mode; the wall times
(end_s - end_s of the process's previous superstep, as the runtime writes
them) make max_p wall_s the same T, so the same rows spread over two hosts
(where the tool takes T = max_p wall_s) give the same answer. F_io must come
out with zero error and every other function with the errors this file
computes on its own (the formulas below are written out independently of the
tool's). A small hand-made profile out of lock-step checks the two rules
against each other. The tool runs as a subprocess, as a user would run it.
"""

import json
import os
import random
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "bspk-predict")
HEADER = ("pid,superstep,mode,w_s,issue_s,msgs_out,bytes_out,msgs_in,bytes_in,remote_out,self_bytes,stored_out,"
          "stored_in,"
          "fetched_out,fetched_in,wait_s,wall_s,end_s,host,comem_bytes,cpu_s,cpus")
# The header before cpu_s and cpus: still read (no shared-CPU warning).
NOCPU_HEADER = HEADER[:-len(",cpu_s,cpus")]
# The header before comem_bytes: still read (no --cold-machine switching).
MID_HEADER = NOCPU_HEADER[:-len(",comem_bytes")]
CPUS = 4  # the CPUs of the host in the cpus column: P = 3 processes do not share one
# The header before issue_s, remote_out and self_bytes: still read (issue_s =
# 0, remote_out = msgs_out, self_bytes = 0).
PREV_HEADER = ("pid,superstep,mode,w_s,msgs_out,bytes_out,msgs_in,bytes_in,stored_out,stored_in,"
               "fetched_out,fetched_in,wait_s,wall_s,end_s,host")
OLD_HEADER = ("pid,superstep,mode,w_s,msgs_out,bytes_out,msgs_in,bytes_in,stored_out,stored_in,"
              "fetched_out,fetched_in,wait_s,wall_s")
NPROCS = 3
# comem_bytes of process p in superstep s: COMEM[s % 3] * (p + 1); with
# LLC_BYTES, a host holding all three processes is past its last-level cache
# in supersteps 1 and 4 (6 x 8 MiB) and 2 and 5 (6 x 6 MiB), not 0 and 3.
COMEM = (1 << 20, 8 << 20, 6 << 20)
LLC_BYTES = 32 << 20
HOST = "node-07.cluster-a.example"
CLOCK_START = 12345.678901234  # CLOCK_MONOTONIC when the processes start (s)
TIGHT = 1e-9  # "exactly", up to floating-point rounding


def has_matplotlib():
    return subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True).returncode == 0


# --------------------------------------------------------------- the machine

def coefficients(scale):
    """All nine functions; scale makes the modes differ. Extra keys are ignored by the tool."""
    k = scale
    return {
        "F_h": {"g": 2.0e-9 * k, "l": 4.0e-6 * k, "r2": 0.97},
        "F_io": {"g_i": 0.6e-9 * k, "g_o": 1.5e-9 * k, "l": 3.0e-6 * k, "max_err": 0.1},
        "F_ioM": {"g_i": 0.5e-9 * k, "g_o": 1.4e-9 * k, "g_M": 0.1e-9 * k, "l": 2.5e-6 * k},
        "F_hM": {"g": 1.7e-9 * k, "g_M": 0.2e-9 * k, "l": 3.5e-6 * k},
        "F_M": {"g_M": 0.8e-9 * k, "l": 9.0e-6 * k},
        "F_oM": {"g_o": 1.6e-9 * k, "g_M": 0.15e-9 * k, "l": 3.2e-6 * k},
        "F_iM": {"g_i": 1.1e-9 * k, "g_M": 0.4e-9 * k, "l": 6.0e-6 * k},
        "F_o": {"g_o": 1.9e-9 * k, "l": 3.8e-6 * k},
        "F_i": {"g_i": 2.2e-9 * k, "l": 8.0e-6 * k},
    }


COEFFS = {"counted": coefficients(1.0), "expect": coefficients(0.7), "will_send": coefficients(1.3)}
ORDER = ["F_h", "F_io", "F_ioM", "F_hM", "F_M", "F_oM", "F_iM", "F_o", "F_i"]
ORDER_ALL = ORDER + [f + "+o" for f in ORDER]  # the nine, then each with the per-message term
# o_msg, o_msg_large, g_self per mode
O_MSG = {"counted": (1.0e-6, 3.0e-6, 0.3e-9), "expect": (0.7e-6, 2.1e-6, 0.2e-9), "will_send": (1.3e-6, 3.9e-6, 0.4e-9)}

# The nine functions, written out (h = max(h_i, h_o)).
FORMULAS = {
    "F_h": lambda c, hi, ho, m: c["g"] * max(hi, ho) + c["l"],
    "F_io": lambda c, hi, ho, m: c["g_i"] * hi + c["g_o"] * ho + c["l"],
    "F_ioM": lambda c, hi, ho, m: c["g_i"] * hi + c["g_o"] * ho + c["g_M"] * m + c["l"],
    "F_hM": lambda c, hi, ho, m: c["g"] * max(hi, ho) + c["g_M"] * m + c["l"],
    "F_M": lambda c, hi, ho, m: c["g_M"] * m + c["l"],
    "F_oM": lambda c, hi, ho, m: c["g_o"] * ho + c["g_M"] * m + c["l"],
    "F_iM": lambda c, hi, ho, m: c["g_i"] * hi + c["g_M"] * m + c["l"],
    "F_o": lambda c, hi, ho, m: c["g_o"] * ho + c["l"],
    "F_i": lambda c, hi, ho, m: c["g_i"] * hi + c["l"],
}


def machine_doc(nprocs=NPROCS, drop_mode=None, drop_function=None, per_message=True, store_scale=1.0, scale=1.0,
                cold=False):
    """A machine file with every coefficient times scale; its store_modes (the
    fits of DSM stores) are the modes' coefficients times store_scale (None:
    no store_modes, an older file)."""
    modes = {}
    for mode, fns in COEFFS.items():
        if mode == drop_mode:
            continue
        fns = {k: {c: x * scale for c, x in v.items()} for k, v in fns.items() if (mode, k) != drop_function}
        modes[mode] = {"l_empty": 2.1e-6 * scale, "functions": fns}
        if per_message:
            modes[mode].update(o_msg=O_MSG[mode][0] * scale, o_msg_large=O_MSG[mode][1] * scale,
                               g_self=O_MSG[mode][2] * scale)
    doc = {"format": "bspk-machine 1", "provider": "shm", "nprocs": nprocs, "hosts": 1,
           "created": "2024-01-01T00:00:00Z", "units": {"g": "seconds per byte", "l": "seconds"},
           "cold": cold, "llc_bytes": LLC_BYTES, "modes": modes}
    if store_scale is not None:
        doc["store_modes"] = {
            mode: {k: ({f: {c: v * store_scale for c, v in fc.items()} for f, fc in m["functions"].items()}
                       if k == "functions" else (v * store_scale if isinstance(v, float) else v))
                   for k, v in m.items()}
            for mode, m in modes.items()}
    return doc


# --------------------------------------------------------------- the profile

# Per superstep: the mode of its rows, then per process the bytes
# (bytes_out, stored_out, fetched_out) and (bytes_in, stored_in, fetched_in).
# Traffic is conserved (sum out = sum in) as in a real run.
SUPERSTEPS = [
    ("expect", [(4000, 0, 0), (1000, 0, 0), (0, 0, 0)],
               [(0, 0, 0), (2500, 0, 0), (2500, 0, 0)]),
    ("counted", [(0, 8192, 0), (0, 8192, 0), (0, 0, 0)],
                [(0, 0, 0), (0, 4096, 0), (0, 12288, 0)]),
    ("will_send", [(500, 0, 0), (0, 0, 0), (0, 0, 30000)],
                  [(0, 0, 15000), (500, 0, 15000), (0, 0, 0)]),
    ("expect", [(0, 0, 0)] * 3, [(0, 0, 0)] * 3),                  # no communication: M = 0
    ("counted", [(2000, 0, 0), (2000, 7000, 0), (2000, 0, 0)],
                [(2000, 0, 0), (2000, 0, 0), (2000, 7000, 0)]),
    ("will_send", [(0, 0, 0), (12000, 0, 0), (12000, 0, 0)],       # a gather: h_i >> h_o
                  [(24000, 0, 0), (0, 0, 0), (0, 0, 0)]),
    ("finalize", [(100, 0, 0), (0, 0, 0), (0, 0, 0)],
                 [(0, 0, 0), (100, 0, 0), (0, 0, 0)]),
]


def effective(mode, machine_modes):
    """The machine mode whose coefficients apply to a profile mode."""
    m = "counted" if mode == "finalize" else mode
    return m if m in machine_modes else "counted"


def make_rows(modes_override=None, hosts=None, to_self=True):
    """The profile rows (dicts, superstep by superstep) and the per-superstep truth.

    The measured C of every superstep equals F_io's prediction in its mode.
    Process LEADER ends every superstep last, at E(s); the others end a little
    earlier, lagging more each superstep, so their wall times are shorter than
    the leader's. E(s) - E(s-1) = T is exact in floating point (the operands
    are within a factor 2), and w = max_p w_s (of some other process, usually)
    is T - F_io, so C = T - w = F_io up to rounding in the last bits of C; the
    leader's wall time (its end minus its previous end) is the same T, so the
    wall rule gives the same answer. hosts: pid -> host name (default: all on
    HOST); a process on another host than pid 0's reads a clock offset by
    1000 s per host, as different machines' clocks are unrelated. to_self:
    each process also sends 100 (pid + 1) bytes to itself, in bytes_out,
    bytes_in and self_bytes, which the tool must leave out of the relation."""
    leader = 1
    hosts = hosts or {p: HOST for p in range(NPROCS)}
    host_names = sorted(set(hosts.values()), key=list(hosts.values()).index)
    rows, truth = [], []
    prev_end = [CLOCK_START] * NPROCS  # every process starts at the same moment
    for s, (mode, outs, ins) in enumerate(SUPERSTEPS):
        o = [sum(t) for t in outs]
        i = [sum(t) for t in ins]
        h_o, h_i, m = max(o), max(i), sum(o)
        c_io = FORMULAS["F_io"](COEFFS[effective(mode, COEFFS)]["F_io"], h_i, h_o, m)
        w_s = [1e-5 * (1 + ((p + s) % NPROCS)) + 1e-6 * s for p in range(NPROCS)]
        top = w_s.index(max(w_s))
        e = prev_end[leader] + (w_s[top] + c_io)
        t = e - prev_end[leader]  # exact
        w_s[top] = t - c_io        # so that T - w is F_io's prediction
        # Operations to other processes: 3 per message sent, 1 per store; the
        # per-message term takes the busiest process (the first, on a tie) and
        # its bytes per operation (above 4096: o_msg_large).
        remote = [3 * int(outs[p][0] > 0) + int(outs[p][1] > 0) for p in range(NPROCS)]
        busiest = remote.index(max(remote))
        n = remote[busiest]
        own = [100 * (p + 1) if to_self else 0 for p in range(NPROCS)]
        # C = T - w as the data says: F_io's prediction up to the last bit or so
        # stores and fetches outweigh messages (by bytes): the store fits apply
        via = "store" if sum(outs[p][1] + outs[p][2] for p in range(NPROCS)) > sum(outs[p][0] for p in range(NPROCS)) \
            else "send"
        per_host = {}
        for p in range(NPROCS):
            per_host[hosts[p]] = per_host.get(hosts[p], 0) + COMEM[s % len(COMEM)] * (p + 1)
        truth.append({"mode": mode, "h_i": h_i, "h_o": h_o, "M": m, "w": w_s[top], "C": t - w_s[top],
                      "n": n, "large": n > 0 and o[busiest] / n > 4096, "own": max(own), "via": via,
                      "footprint": max(per_host.values())})
        for p in range(NPROCS):
            end = e if p == leader else e - 1e-7 * (1 + p) * (s + 1)
            wall = end - prev_end[p]
            prev_end[p] = end
            row_mode = mode
            if modes_override and (s, p) in modes_override:
                row_mode = modes_override[(s, p)]
            rows.append({
                "pid": p, "superstep": s, "mode": row_mode, "w_s": w_s[p], "issue_s": 1e-7 * (p + 1),
                "msgs_out": int(outs[p][0] > 0) + int(to_self), "bytes_out": outs[p][0] + own[p],
                "msgs_in": int(ins[p][0] > 0) + int(to_self), "bytes_in": ins[p][0] + own[p],
                "remote_out": remote[p], "self_bytes": own[p],
                "stored_out": outs[p][1], "stored_in": ins[p][1],
                "fetched_out": outs[p][2], "fetched_in": ins[p][2],
                "wait_s": wall - w_s[p] - 1e-7 * (p + 1), "wall_s": wall,
                "end_s": end + 1000.0 * host_names.index(hosts[p]), "host": hosts[p],
                "comem_bytes": COMEM[s % len(COMEM)] * (p + 1),
                "cpu_s": "", "cpus": CPUS,  # (the runtime measures cpu_s only where processes share CPUs)
            })
    return rows, truth


def csv_line(r):
    # repr(): the floats read back exactly, so "exactly F_io" survives the file.
    return ",".join(repr(r[c]) if isinstance(r[c], float) else str(r[c]) for c in HEADER.split(","))


def expected_prediction(f, t, machine_modes, store_scale=1.0, cold_scale=None):
    """Function f's prediction for superstep t (f may end in +o: plus o*n);
    a superstep that stores takes the store fits, the modes' times store_scale
    (None: the file has none, so the modes' own); with cold_scale (a
    --cold-machine whose coefficients are cold_scale times these), one past
    LLC_BYTES of comem on a host takes those."""
    mode = effective(t["mode"], machine_modes)
    k = store_scale if t["via"] == "store" and store_scale is not None else 1.0
    if cold_scale is not None and t["footprint"] > LLC_BYTES:
        k *= cold_scale
    base = f[:-2] if f.endswith("+o") else f
    pred = FORMULAS[base]({c: v * k for c, v in COEFFS[mode][base].items()}, t["h_i"], t["h_o"], t["M"])
    if f.endswith("+o"):
        extra = max(0, t["n"] - (NPROCS - 1))  # operations beyond one per other process
        pred += k * (O_MSG[mode][1 if t["large"] else 0] * extra + O_MSG[mode][2] * t["own"])
    return pred


def expected_summary(truth, machine_modes, min_bytes=1, functions=ORDER_ALL, store_scale=1.0, cold_scale=None):
    """The summary the tool must report, computed here independently."""
    meas_total = sum(t["C"] for t in truth)
    out = {}
    for f in functions:
        preds = [expected_prediction(f, t, machine_modes, store_scale, cold_scale) for t in truth]
        errs = [abs(p - t["C"]) / t["C"] for p, t in zip(preds, truth) if t["M"] >= min_bytes and t["C"] > 0]
        out[f] = {"predicted_total_s": sum(preds),
                  "total_err": abs(sum(preds) - meas_total) / meas_total,
                  "avg_err": sum(errs) / len(errs) if errs else None,
                  "max_err": max(errs) if errs else None,
                  "n": len(errs)}
    return meas_total, out


class PredictTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="bspk-predict-test.")
        self.dir = self._tmp.name
        self.rows, self.truth = make_rows()
        self.machine = self.write_machine("machine.json", machine_doc())
        self.combined = self.write_combined("profile.csv", self.rows)

    def tearDown(self):
        self._tmp.cleanup()

    # ---- helpers

    def path(self, name):
        return os.path.join(self.dir, name)

    def write_machine(self, name, doc):
        with open(self.path(name), "w") as f:
            json.dump(doc, f, indent=2)
        return self.path(name)

    def write_lines(self, name, lines):
        with open(self.path(name), "w") as f:
            f.write("".join(line + "\n" for line in lines))
        return self.path(name)

    def write_combined(self, name, rows):
        """One file, the rows of all processes shuffled, the header repeated midway."""
        lines = [csv_line(r) for r in rows]
        random.Random(14).shuffle(lines)
        lines.insert(len(lines) // 2, HEADER)
        return self.write_lines(name, [HEADER] + lines)

    def write_split(self, rows, prefix="prof"):
        """One file per process, each with its header (BSPK_PROFILE=prof%p.csv)."""
        return [self.write_lines(f"{prefix}{p}.csv", [HEADER] + [csv_line(r) for r in rows if r["pid"] == p])
                for p in range(NPROCS)]

    def run_tool(self, *args):
        return subprocess.run([sys.executable, TOOL] + [str(a) for a in args], capture_output=True, text=True,
                              timeout=120)

    def run_json(self, profiles, machine, *extra, name="out.json"):
        out = self.path(name)
        r = self.run_tool(*profiles, machine, "--json", out, *extra)
        self.assertEqual(r.returncode, 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}")
        with open(out) as f:
            return json.load(f), r

    def assertClose(self, got, want, what, rel=TIGHT, abs_tol=0.0):
        self.assertIsNotNone(got, what)
        self.assertLessEqual(abs(got - want), max(rel * abs(want), abs_tol, 1e-300),
                             f"{what}: got {got!r}, want {want!r}")

    def check_summary(self, doc, machine_modes, functions=ORDER_ALL, min_bytes=1, clock="common", store_scale=1.0,
                      cold_scale=None):
        meas_total, want = expected_summary(self.truth, machine_modes, min_bytes, functions, store_scale, cold_scale)
        self.assertEqual(doc["supersteps"], len(SUPERSTEPS))
        self.assertEqual(doc["nprocs"], NPROCS)
        self.assertEqual(doc["clock"], clock)
        self.assertClose(doc["measured_total_s"], meas_total, "measured_total_s")
        self.assertEqual(list(doc["functions"]), list(functions))
        for f in functions:
            got = doc["functions"][f]
            self.assertEqual(got["n"], want[f]["n"], f"{f} n")
            for key in ("predicted_total_s", "total_err", "avg_err", "max_err"):
                if want[f][key] is None:
                    self.assertIsNone(got[key], f"{f} {key}")
                else:  # errors are fractions: F_io's are 0 up to rounding
                    self.assertClose(got[key], want[f][key], f"{f} {key}",
                                     abs_tol=0.0 if key == "predicted_total_s" else TIGHT)
        return want

    # ---- the numbers

    def test_executable(self):
        self.assertTrue(os.access(TOOL, os.X_OK), f"{TOOL} is not executable")

    def test_f_io_exact_and_others_as_computed(self):
        doc, r = self.run_json([self.combined], self.machine)
        self.assertEqual(r.stderr.splitlines(), [f"bspk-predict: note: superstep times from the common clock of host "
                                                 f"{HOST} (max end - max end of the previous superstep)"],
                         "a consistent profile and machine file give no warnings, one note on the clock")
        want = self.check_summary(doc, COEFFS)
        f_io = doc["functions"]["F_io"]
        for key in ("avg_err", "max_err", "total_err"):
            self.assertLess(f_io[key], TIGHT, f"F_io {key}")
        self.assertEqual(f_io["n"], len(SUPERSTEPS) - 1, "the superstep with M = 0 is not counted")
        for f in ORDER:
            if f != "F_io":
                self.assertGreater(want[f]["avg_err"], 1e-3, f"the test data should tell {f} from F_io")
        self.assertEqual(doc["best"], "F_io")
        self.assertEqual(doc["counted_supersteps"], len(SUPERSTEPS) - 1)
        # The text: header line, the summary table in the paper's order, the best marked.
        out = r.stdout
        self.assertIn("7 supersteps, P = 3", out.splitlines()[0])
        self.assertIn("provider shm, nprocs 3", out.splitlines()[0])
        table = [line for line in out.splitlines() if re.match(r"\| (\*\*)?F_", line)]
        self.assertEqual([re.match(r"\| (?:\*\*)?(F_\w+(?:\+o)?)", line).group(1) for line in table], ORDER_ALL)
        marked = [re.match(r"\| \*\*(F_\w+(?:\+o)?)\*\*", line).group(1) for line in table if "best" in line]
        ranked = [f for f in ORDER_ALL if f.endswith("+o")]
        best_o = min(ranked, key=lambda f: want[f]["avg_err"])
        self.assertEqual(doc["best_with_o"], best_o)
        self.assertEqual(marked, ["F_io", best_o])
        self.assertIn("6 of 7 supersteps", out)

    def test_per_superstep_table(self):
        r = self.run_tool(self.combined, self.machine, "--per-superstep")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line for line in r.stdout.splitlines() if re.match(r"\| \d+ \|", line)]
        self.assertEqual(len(rows), len(SUPERSTEPS))
        for line, t in zip(rows, self.truth):
            cells = [c.strip() for c in line.strip("|").split("|")]
            self.assertEqual(len(cells), 7 + len(ORDER_ALL))
            self.assertTrue(cells[1].startswith(t["mode"]), cells[1])
            self.assertEqual([int(c) for c in cells[2:5]], [t["h_i"], t["h_o"], t["M"]])
            self.assertClose(float(cells[5]), t["w"], "w", rel=1e-4)
            self.assertClose(float(cells[6]), t["C"], "C", rel=1e-4)
            self.assertClose(float(cells[7 + ORDER.index("F_io")]), t["C"], "F_io prediction", rel=1e-4)

    def test_min_bytes(self):
        doc, _ = self.run_json([self.combined], self.machine, "--min-bytes", 0)
        self.check_summary(doc, COEFFS, min_bytes=0)
        self.assertEqual(doc["functions"]["F_h"]["n"], len(SUPERSTEPS))
        doc, _ = self.run_json([self.combined], self.machine, "--min-bytes", 10 ** 12)
        self.check_summary(doc, COEFFS, min_bytes=10 ** 12)
        self.assertEqual(doc["functions"]["F_h"]["n"], 0)
        self.assertIsNone(doc["best"])

    def test_one_file_per_process_same_json(self):
        combined, _ = self.run_json([self.combined], self.machine, name="combined.json")
        with open(self.path("combined.json")) as f:
            combined_text = f.read()
        files = self.write_split(self.rows)
        for order in (files, [files[2], files[0], files[1]]):
            self.run_json(order, self.machine, name="split.json")
            with open(self.path("split.json")) as f:
                self.assertEqual(f.read(), combined_text, f"--json of {order} differs from the one-file profile")

    def test_mode_disagreement_warns_once(self):
        rows, _ = make_rows(modes_override={(1, 2): "expect", (4, 0): "will_send"})
        path = self.write_combined("mixed.csv", rows)
        doc, r = self.run_json([path], self.machine)
        warnings = [line for line in r.stderr.splitlines() if "disagree" in line]
        self.assertEqual(len(warnings), 1, r.stderr)
        self.check_summary(doc, COEFFS)  # the majority modes are the ones used

    def test_nprocs_mismatch_warns(self):
        machine = self.write_machine("m4.json", machine_doc(nprocs=4))
        doc, r = self.run_json([self.combined], machine)
        self.assertRegex(r.stderr, r"warning:.*P = 3.*nprocs = 4")
        self.check_summary(doc, COEFFS)

    # ---- the superstep time: common clock or wall times

    def test_several_hosts_use_the_wall_rule(self):
        # The same run on two hosts (pid 2 on the second, whose clock reads
        # 1000 s ahead): the clocks are not comparable, T = max_p wall_s, and
        # F_io is exact under that rule too.
        rows, _ = make_rows(hosts={0: "node-a.example", 1: "node-a.example", 2: "node-b-2"})
        path = self.write_combined("hosts.csv", rows)
        doc, r = self.run_json([path], self.machine)
        self.assertEqual(r.stderr.splitlines(), ["bspk-predict: note: processes on 2 hosts: superstep time = "
                                                 "largest wall time (assumes lock-step supersteps)"])
        self.check_summary(doc, COEFFS, clock="wall")
        self.assertEqual(doc["best"], "F_io")
        self.assertLess(doc["functions"]["F_io"]["max_err"], TIGHT)

    def test_clock_wall_on_one_host(self):
        # These rows are built so that both rules agree; --clock wall says so in its note.
        doc, r = self.run_json([self.combined], self.machine, "--clock", "wall")
        self.assertEqual(r.stderr.splitlines(), ["bspk-predict: note: --clock wall: superstep time = largest wall "
                                                 "time (assumes lock-step supersteps)"])
        self.check_summary(doc, COEFFS, clock="wall")
        r = self.run_tool(self.combined, self.machine, "--clock", "lamport")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--clock", r.stderr)

    def lazy_profile(self, drop_superstep=None):
        """P = 2 on one host, out of lock-step: the process that finishes last
        changes from superstep to superstep. Times in units of 1/1024 s (exact
        in binary), per superstep and process (w_s, wall_s, end_s - start):

            s   p0: w  wall  end    p1: w  wall  end   max wall  max end
            0       2    5     5        3    8     8       8        8
            1       4    9    14        2    5    13       9       14
            2       1    4    18        2   10    23      10       23

        Common clock: T = 8 (the first: max wall), 14 - 8 = 6, 23 - 14 = 9;
        w = 3, 4, 2; C = 5, 2, 7 (total 14). Wall rule: T = 8, 9, 10;
        C = 5, 5, 8 (total 18). Without superstep 1: common C = 5 and
        (23 - 8) - 2 = 13 (total 18), wall C = 5, 8 (total 13)."""
        u, start = 1.0 / 1024, 4096.0
        table = [((2, 5, 5), (3, 8, 8)), ((4, 9, 14), (2, 5, 13)), ((1, 4, 18), (2, 10, 23))]
        lines = [HEADER]
        for s, procs in enumerate(table):
            if s == drop_superstep:
                continue
            for p, (w, wall, end) in enumerate(procs):
                out, inn = (1000, 0) if p == 0 else (0, 1000)
                lines.append(f"{p},{s},expect,{w * u!r},0.0,{int(out > 0)},{out},{int(inn > 0)},{inn},"
                             f"{int(out > 0)},0,0,0,0,0,{(wall - w) * u!r},{wall * u!r},{start + end * u!r},{HOST},4096,,{CPUS}")
        name = "lazy.csv" if drop_superstep is None else f"lazy_no{drop_superstep}.csv"
        return self.write_lines(name, lines), u

    def per_superstep_c(self, stdout):
        rows = [line for line in stdout.splitlines() if re.match(r"\| \d+ \|", line)]
        return [float(line.strip("|").split("|")[6]) for line in rows]

    def test_one_host_out_of_lock_step(self):
        path, u = self.lazy_profile()
        machine = self.write_machine("m2.json", machine_doc(nprocs=2))
        for clock, cs, note in ((None, [5, 2, 7], f"common clock of host {HOST}"),
                                ("common", [5, 2, 7], f"common clock of host {HOST}"),
                                ("wall", [5, 5, 8], "--clock wall: superstep time = largest wall time")):
            extra = ["--per-superstep"] + (["--clock", clock] if clock else [])
            doc, r = self.run_json([path], machine, *extra)
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertIn(note, r.stderr)
            self.assertEqual(doc["clock"], clock or "common")
            self.assertEqual(doc["supersteps"], 3)
            self.assertEqual(doc["counted_supersteps"], 3)
            self.assertClose(doc["measured_total_s"], sum(cs) * u, f"measured total, --clock {clock}")
            got = self.per_superstep_c(r.stdout)
            self.assertEqual(len(got), 3)
            for k, (g, c) in enumerate(zip(got, cs)):
                self.assertClose(g, c * u, f"C of superstep {k}, --clock {clock}", rel=1e-4)
        # T spans back to the previous superstep present.
        path, u = self.lazy_profile(drop_superstep=1)
        for clock, total in (("common", 18), ("wall", 13)):
            doc, r = self.run_json([path], machine, "--clock", clock)
            self.assertIn("not contiguous", r.stderr)
            self.assertEqual(doc["supersteps"], 2)
            self.assertClose(doc["measured_total_s"], total * u, f"without superstep 1, --clock {clock}")

    def test_launch_skew_is_not_communication_of_superstep_0(self):
        """Processes leave bspk_init at different moments: p1 starts superstep 0
        6 units after p0, which waits for it. Times in 1/1024 s:

            s   p0: w  wall  end (start 0)    p1: w  wall  end (start 6)
            0       1    8     8                  1    2     8
            1       2    5    13                  3    5    13

        Common clock: superstep 0 runs from the last start (6) to 8: T = 2,
        C = 2 - 1 = 1 (not the 7 units p0 waited for p1 to be launched);
        superstep 1: T = 13 - 8 = 5, C = 2. Wall rule: T = 8 and 5, C = 7 and 2."""
        u, start = 1.0 / 1024, 4096.0
        table = [((1, 8, 8), (1, 2, 8)), ((2, 5, 13), (3, 5, 13))]
        lines = [HEADER]
        for s, procs in enumerate(table):
            for p, (w, wall, end) in enumerate(procs):
                out, inn = (1000, 0) if p == 0 else (0, 1000)
                lines.append(f"{p},{s},expect,{w * u!r},0.0,{int(out > 0)},{out},{int(inn > 0)},{inn},"
                             f"{int(out > 0)},0,0,0,0,0,{(wall - w) * u!r},{wall * u!r},{start + end * u!r},{HOST},4096,,{CPUS}")
        path = self.write_lines("skew.csv", lines)
        machine = self.write_machine("m2s.json", machine_doc(nprocs=2))
        for clock, cs in (("common", [1, 2]), ("wall", [7, 2])):
            doc, r = self.run_json([path], machine, "--per-superstep", "--clock", clock)
            got = self.per_superstep_c(r.stdout)
            self.assertEqual(len(got), 2)
            for k, (g, c) in enumerate(zip(got, cs)):
                self.assertClose(g, c * u, f"C of superstep {k}, --clock {clock}", rel=1e-4)
            self.assertClose(doc["measured_total_s"], sum(cs) * u, f"measured total, --clock {clock}")

    # ---- the machine file

    def test_supersteps_that_store_use_the_store_fits(self):
        """Supersteps whose bytes are mostly DSM stores and fetches take the
        machine file's store_modes; the others its modes."""
        self.assertEqual({t["via"] for t in self.truth}, {"send", "store"}, "the profile must have both kinds")
        machine = self.write_machine("stores.json", machine_doc(store_scale=2.0))
        doc, r = self.run_json([self.combined], machine)
        self.check_summary(doc, set(COEFFS), store_scale=2.0)
        doc, r = self.run_json([self.combined], machine, "--per-superstep")
        shown = [line.split("|")[2].strip() for line in r.stdout.splitlines() if re.match(r"\| \d+ \|", line)]
        want = [f"{t['mode']} (store:{effective(t['mode'], set(COEFFS))})" if t["via"] == "store"
                else t["mode"] if t["mode"] != "finalize" else "finalize (counted)" for t in self.truth]
        self.assertEqual(shown, want)

    def test_machine_file_without_store_fits(self):
        """An older machine file (no store_modes): stores take the fits of
        messages, and a note says so once per mode."""
        machine = self.write_machine("old.json", machine_doc(store_scale=None))
        doc, r = self.run_json([self.combined], machine)
        self.check_summary(doc, set(COEFFS), store_scale=None)
        notes = [line for line in r.stderr.splitlines() if "no fits of stores" in line]
        store_modes = {effective(t["mode"], set(COEFFS)) for t in self.truth if t["via"] == "store"}
        self.assertEqual(len(notes), len(store_modes), r.stderr)

    def test_cold_machine_for_supersteps_past_the_cache(self):
        """--cold-machine: supersteps after which a host's processes hold more
        comem bytes than llc_bytes take the cold file's coefficients (stores
        its store fits), the others the machine file's."""
        self.assertEqual({t["footprint"] > LLC_BYTES for t in self.truth}, {True, False})
        cold = self.write_machine("cold.json", machine_doc(scale=3.0, store_scale=2.0, cold=True))
        warm = self.write_machine("warm.json", machine_doc(store_scale=2.0))
        doc, r = self.run_json([self.combined], warm, "--cold-machine", cold)
        self.check_summary(doc, set(COEFFS), store_scale=2.0, cold_scale=3.0)
        past = sum(t["footprint"] > LLC_BYTES for t in self.truth)
        self.assertIn(f"{past} of {len(self.truth)} supersteps hold more than the 32 MiB", r.stderr)
        # Without it, the same profile is all warm.
        doc, r = self.run_json([self.combined], warm)
        self.check_summary(doc, set(COEFFS), store_scale=2.0)

    def test_profile_without_comem_bytes(self):
        """A profile written before comem_bytes is read; --cold-machine then
        changes nothing, and a note says why."""
        cols = MID_HEADER.split(",")
        lines = [MID_HEADER] + [",".join(csv_line(r).split(",")[:len(cols)]) for r in self.rows]
        path = self.write_lines("mid.csv", lines)
        cold = self.write_machine("cold.json", machine_doc(scale=3.0, cold=True))
        doc, r = self.run_json([path], self.machine, "--cold-machine", cold)
        self.check_summary(doc, set(COEFFS))
        self.assertIn("no comem_bytes", r.stderr)

    def test_profile_without_cpu_columns(self):
        """A profile written before cpu_s and cpus is read as before."""
        cols = NOCPU_HEADER.split(",")
        lines = [NOCPU_HEADER] + [",".join(csv_line(r).split(",")[:len(cols)]) for r in self.rows]
        doc, r = self.run_json([self.write_lines("nocpu.csv", lines)], self.machine)
        self.check_summary(doc, set(COEFFS))
        self.assertNotIn("CPUs", r.stderr)

    def test_processes_sharing_cpus_warned(self):
        """P = 3 processes on 2 CPUs: the numbers are unchanged (the paper's
        rule), and a warning says the cost functions assume a processor per
        process and how much of w_s + issue_s was spent waiting for a CPU:
        here cpu_s is a quarter of it, so 75%. With a CPU per process, or no
        cpu_s, no percentage."""
        rows = [dict(r, cpus=2, cpu_s=(r["w_s"] + r["issue_s"]) / 4) for r in self.rows]
        doc, r = self.run_json([self.write_combined("shared.csv", rows)], self.machine)
        self.check_summary(doc, set(COEFFS))
        warned = [line for line in r.stderr.splitlines() if "warning" in line and "CPUs" in line]
        self.assertEqual(len(warned), 1, r.stderr)
        self.assertIn(f"host {HOST} runs 3 processes on 2 CPUs", warned[0])
        self.assertIn("75% of its processes' time outside bspk_sync (w_s + issue_s) was spent waiting for a CPU",
                      warned[0])
        rows = [dict(r, cpus=2) for r in self.rows]  # cpu_s empty: the warning without the share
        doc, r = self.run_json([self.write_combined("shared_nocpu.csv", rows)], self.machine, name="o2.json")
        self.assertIn("runs 3 processes on 2 CPUs", r.stderr)
        self.assertNotIn("waiting for a CPU", r.stderr)
        doc, r = self.run_json([self.combined], self.machine, name="o3.json")  # 3 processes, 4 CPUs
        self.assertNotIn("CPUs", r.stderr)

    def test_missing_mode_falls_back_to_counted(self):
        machine = self.write_machine("no_ws.json", machine_doc(drop_mode="will_send"))
        doc, r = self.run_json([self.combined], machine)
        notes = [line for line in r.stderr.splitlines() if "will_send" in line]
        # will_send supersteps both send and store here: one note for each fit
        self.assertEqual({t["via"] for t in self.truth if t["mode"] == "will_send"}, {"send", "store"})
        self.assertEqual(len(notes), 2, r.stderr)
        self.assertEqual(len([n for n in notes if "store mode" in n and "'store:counted'" in n]), 1, r.stderr)
        for n in notes:
            self.assertIn("counted", n)
            self.assertIn("note", n)
        modes = {"counted", "expect"}
        want = self.check_summary(doc, modes)
        # F_io no longer fits the will_send supersteps exactly.
        self.assertGreater(want["F_io"]["max_err"], 1e-3)
        self.assertGreater(doc["functions"]["F_io"]["max_err"], 1e-3)

    def test_missing_function_is_skipped(self):
        machine = self.write_machine("no_fim.json", machine_doc(drop_function=("expect", "F_iM")))
        doc, r = self.run_json([self.combined], machine)
        self.assertIn("F_iM", r.stderr)
        self.assertEqual(len([line for line in r.stderr.splitlines() if "F_iM" in line]), 1)
        self.check_summary(doc, COEFFS, functions=[f for f in ORDER_ALL if f not in ("F_iM", "F_iM+o")])
        self.assertNotIn("F_iM", r.stdout.split("Summary")[1])

    def test_bad_machine_file(self):
        bad = self.path("bad.json")
        with open(bad, "w") as f:
            f.write('{"format": "bspk-machine 1",\n "modes": {\n')
        r = self.run_tool(self.combined, bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad, r.stderr)
        doc = machine_doc()
        doc["modes"]["counted"]["functions"]["F_o"]["g_o"] = "fast"
        bad2 = self.write_machine("bad2.json", doc)
        r = self.run_tool(self.combined, bad2)
        self.assertEqual(r.returncode, 2)
        self.assertIn("F_o", r.stderr)

    # ---- malformed profiles: exit 2, the message names the file and the line

    def assert_refused(self, r, path, line, *words):
        self.assertEqual(r.returncode, 2, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}")
        self.assertIn(f"{path}:{line}:", r.stderr)
        for w in words:
            self.assertIn(w, r.stderr)
        self.assertEqual(r.stdout, "", "nothing is printed for bad input")

    def test_bad_column_count(self):
        lines = [HEADER] + [csv_line(r) for r in self.rows]
        lines[2] = lines[2].rsplit(",", 1)[0]  # line 3 loses cpus
        path = self.write_lines("short.csv", lines)
        self.assert_refused(self.run_tool(path, self.machine), path, 3, "22", "21")

    def test_bad_value(self):
        lines = [HEADER] + [csv_line(r) for r in self.rows]
        lines[5] = lines[5].replace(",", ",x", 1)  # line 6: superstep "x..."
        path = self.write_lines("value.csv", lines)
        self.assert_refused(self.run_tool(path, self.machine), path, 6, "superstep")

    def test_machine_without_per_message_cost(self):
        # A machine file from before o_msg: the nine functions only, with a note.
        machine = self.write_machine("no_o.json", machine_doc(per_message=False))
        doc, r = self.run_json([self.combined], machine)
        self.assertEqual(len([line for line in r.stderr.splitlines() if "o_msg" in line]), 1, r.stderr)
        self.check_summary(doc, COEFFS, functions=ORDER)
        self.assertIsNone(doc["best_with_o"])
        self.assertEqual(doc["best"], "F_io")

    def test_previous_header_read(self):
        # A profile written before issue_s and remote_out: read with issue_s =
        # 0 and remote_out = msgs_out (a note says so).
        cols = PREV_HEADER.split(",")
        rows, _ = make_rows(to_self=False)  # the older runtime's bytes_out counted them too
        lines = [PREV_HEADER] + [",".join(repr(r[c]) if isinstance(r[c], float) else str(r[c]) for c in cols)
                                 for r in rows]
        path = self.write_lines("prev.csv", lines)
        doc, r = self.run_json([path], self.machine)
        self.assertEqual(len([line for line in r.stderr.splitlines() if "issue_s" in line]), 1, r.stderr)
        truth = []
        for t, (mode, outs, ins) in zip(self.truth, SUPERSTEPS):
            remote = [int(o[0] > 0) for o in outs]
            busiest = remote.index(max(remote))
            n = remote[busiest]
            truth.append(dict(t, n=n, large=n > 0 and sum(outs[busiest]) / n > 4096, own=0))
        meas_total, want = expected_summary(truth, COEFFS)
        self.assertClose(doc["measured_total_s"], meas_total, "measured_total_s")
        for f in ORDER_ALL:
            for key in ("predicted_total_s", "total_err"):
                self.assertClose(doc["functions"][f][key], want[f][key], f"{f} {key}", abs_tol=TIGHT)

    def test_mixed_headers_refused(self):
        lines = [HEADER, csv_line(self.rows[0]), PREV_HEADER]
        path = self.write_lines("mixed_headers.csv", lines)
        r = self.run_tool(path, self.machine)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("differs from the file's first header", r.stderr)

    def test_old_header_refused(self):
        # A profile of the older runtime: 14 columns, no end_s and host.
        old_cols = OLD_HEADER.split(",")
        lines = [OLD_HEADER] + [",".join(csv_line(r).split(",")[:len(old_cols)]) for r in self.rows]
        path = self.write_lines("old.csv", lines)
        self.assert_refused(self.run_tool(path, self.machine), path, 1, "header", f"'{HEADER}'")
        # Also after a good file, as the header of a second one.
        self.assert_refused(self.run_tool(self.combined, path, self.machine), path, 1, f"'{HEADER}'")

    def test_bad_end_s_and_host(self):
        def bad(name, lineno, column, value):
            lines = [HEADER] + [csv_line(r) for r in self.rows]
            fields = lines[lineno - 1].split(",")
            fields[HEADER.split(",").index(column)] = value
            lines[lineno - 1] = ",".join(fields)
            return self.write_lines(name, lines)

        for k, value in enumerate(("-0.5", "soon", "nan", "inf", "")):
            path = bad(f"end{k}.csv", 4 + k, "end_s", value)
            self.assert_refused(self.run_tool(path, self.machine), path, 4 + k, "end_s", f"'{value}'")
        for k, value in enumerate(("", "  ")):
            path = bad(f"host{k}.csv", 7 + k, "host", value)
            self.assert_refused(self.run_tool(path, self.machine), path, 7 + k, "host", "empty")

    def test_end_s_going_backwards_refused(self):
        # Process 2's superstep 3 ends before its superstep 2: rows of two runs.
        rows = [dict(r) for r in self.rows]
        r2 = next(r for r in rows if (r["pid"], r["superstep"]) == (2, 2))
        r3 = next(r for r in rows if (r["pid"], r["superstep"]) == (2, 3))
        r3["end_s"] = r2["end_s"] - 1.0
        files = self.write_split(rows, prefix="back")
        # header, s0, s1, s2, s3 -> line 5 of process 2's file.
        self.assert_refused(self.run_tool(*files, self.machine), files[2], 5, "end_s", "process 2",
                            f"{files[2]}:4")

    def test_missing_process_in_superstep(self):
        rows = [r for r in self.rows if (r["pid"], r["superstep"]) != (1, 2)]
        files = self.write_split(rows, prefix="gap")
        # Superstep 2's first row is in the first file (pid 0): header, s0, s1, s2 -> line 4.
        self.assert_refused(self.run_tool(*files, self.machine), files[0], 4, "superstep 2", "process 1")

    def test_missing_header(self):
        path = self.write_lines("nohead.csv", [csv_line(r) for r in self.rows])
        self.assert_refused(self.run_tool(path, self.machine), path, 1, "header")
        # A per-process file without its header, after a good one.
        files = self.write_split(self.rows, prefix="h")
        with open(files[1]) as f:
            body = f.read().split("\n", 1)[1]
        with open(files[1], "w") as f:
            f.write(body)
        self.assert_refused(self.run_tool(*files, self.machine), files[1], 1, "header")

    def test_duplicate_rows(self):
        r = self.run_tool(self.combined, self.combined, self.machine)
        self.assertEqual(r.returncode, 2)
        self.assertIn("second row", r.stderr)

    # ---- the plot

    @unittest.skipUnless(has_matplotlib(), "matplotlib is not installed")
    def test_plot(self):
        png = self.path("pred.png")
        r = self.run_tool(self.combined, self.machine, "--plot", png)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(png, "rb") as f:
            data = f.read()
        self.assertGreater(len(data), 1000)
        self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")

    @unittest.skipIf(has_matplotlib(), "matplotlib is installed (test_plot covers --plot)")
    def test_plot_without_matplotlib(self):
        png, out = self.path("pred.png"), self.path("still.json")
        r = self.run_tool(self.combined, self.machine, "--plot", png, "--json", out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("matplotlib", r.stderr)
        self.assertFalse(os.path.exists(png))
        self.assertTrue(os.path.getsize(out) > 0, "the summary is still written")
        self.assertIn("Summary", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
