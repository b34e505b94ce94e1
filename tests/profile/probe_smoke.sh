#!/bin/sh
# tests/profile/probe_smoke.sh BUILD SRC PROVIDER NP -- the cost-model tools end
# to end, small: bspk-probe (few runs, small h) writes a machine file with all
# nine functions fitted for every mode, for messages and for stores (finite
# coefficients, errors reported) and both per-message costs;
# a profiled run of profile_check is then predicted with it by bspk-predict,
# whose JSON summary must cover every function, with and without o*n. No timing is asserted.
set -eu
build=$1; src=$2; prov=$3; np=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cold="" llc=""
[ "$prov" = shm ] && cold=--cold  # the cache-evicting variant on one provider (it costs seconds)
[ "$prov" = tcp ] && llc="--llc 8388608"  # the cache size given, not measured, on the other
timeout --foreground 300 "$build/bspkrun" -n "$np" --provider "$prov" "$build/costmodel/bspk-probe" --quick --runs 3 $cold $llc \
  --hmax 262144 --out "$dir/machine.json" --raw "$dir/raw.csv" > "$dir/probe.txt"
grep -q "Suite 2 validation, avg err" "$dir/probe.txt" || { cat "$dir/probe.txt"; echo "FAIL: no table"; exit 1; }
BSPK_PROFILE="$dir/profile.csv" timeout --foreground 120 "$build/bspkrun" -n "$np" --provider "$prov" \
  "$build/tests/profile/profile_check" "$dir/profile.csv" > "$dir/check.txt"
/usr/bin/python3 "$src/costmodel/bspk-predict" "$dir/profile.csv" "$dir/machine.json" --json "$dir/predict.json" \
  --per-superstep > "$dir/predict.txt"
/usr/bin/python3 - "$dir/machine.json" "$dir/predict.json" "$dir/raw.csv" "$np" "$cold" "$llc" <<'PY'
import csv, json, math, sys
machine, pred, raw, np_ = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], int(sys.argv[4])
# the last-level cache: given (--llc) it is used as is and not measured;
# else the smaller of hwloc's and the measured one where both exist
llc, rep, mea = machine["llc_bytes"], machine["llc_reported"], machine["llc_measured"]
if sys.argv[6]:
    assert llc == int(sys.argv[6].split()[1]) and mea == 0, (llc, rep, mea)
else:
    assert llc > 0 and llc == (min(rep, mea) if rep and mea else rep or mea or 32 << 20), (llc, rep, mea)
names = ["F_h", "F_io", "F_ioM", "F_hM", "F_M", "F_oM", "F_iM", "F_o", "F_i"]
assert machine["format"] == "bspk-machine 1" and machine["nprocs"] == np_, machine
assert machine["cold"] == (sys.argv[5] == "--cold"), machine["cold"]
# --runs 3 as given, and the default of one untimed execution before each timed one
assert machine["runs"] == 3 and machine["warm"] == 1, (machine["runs"], machine.get("warm"))
assert sorted(machine["modes"]) == ["counted", "expect", "will_send"], machine["modes"].keys()
assert sorted(machine.get("store_modes", {})) == ["counted", "expect", "will_send"], "no store fits"
for mode, m in list(machine["modes"].items()) + [("store:" + k, v) for k, v in machine["store_modes"].items()]:
    assert m["l_empty"] > 0, (mode, m["l_empty"])
    assert all(math.isfinite(m[k]) for k in ("o_msg", "o_msg_large", "g_self")), (mode, m)
    assert sorted(m["functions"]) == sorted(names), (mode, m["functions"].keys())
    for n, f in m["functions"].items():
        for k, v in f.items():
            assert isinstance(v, float) and math.isfinite(v), (mode, n, k, v)
            # no coefficient blown up by dependent columns: under 10 us per byte
            assert not k.startswith("g") or abs(v) < 1e-5, (mode, n, k, v)
rows = list(csv.DictReader(open(raw)))
# every pattern of both suites, in every mode; summaries consistent
assert len({(r["op"], r["mode"], r["suite"]) for r in rows}) == 12, "raw file lacks an operation, mode or suite"
for r in rows:
    hi, ho, M = float(r["h_i"]), float(r["h_o"]), float(r["M"])
    assert max(hi, ho) <= M <= np_ * min(hi, ho) + 1e-9 and float(r["median_s"]) > 0, r
assert sorted(pred["functions"]) == sorted(names + [n + "+o" for n in names]), pred["functions"].keys()
assert pred["best"] in names and pred["best_with_o"] in [n + "+o" for n in names], pred
assert pred["supersteps"] == 6 and pred["nprocs"] == np_, pred
print("probe_smoke: ok:", len(rows), "patterns,", len(names), "functions x 3 modes")
PY
