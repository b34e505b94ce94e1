"""bench/rawlines.py -- the raw result lines the benchmark drivers collect
(comma-separated, one measurement per line; other lines are ignored), read
into dicts with typed fields. Used by bench/suite/report.py and
bench/bsplib/report.py."""


def load(path, fields, ints, floats):
    """Rows of `path` that have exactly len(fields) values, as dicts keyed by
    `fields`; the keys in `ints` / `floats` converted to int / float."""
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) != len(fields):
                continue
            r = dict(zip(fields, parts))
            for k in ints:
                r[k] = int(r[k])
            for k in floats:
                r[k] = float(r[k])
            rows.append(r)
    return rows
