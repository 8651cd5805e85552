# Landscape statistics of a recorded sweep (docs/SEARCH.md, "The default knob search"): settings
# with their typical speedup (median of their successful timings), how many are within 5% of the
# best, local optima (recorded settings faster than every recorded one-knob neighbour of the same
# source), the fitness-distance correlation over the best's source, timings per setting and their
# median coefficient of variation.   python3 landscape.py STORE SESSION[,SESSION...]
import sqlite3, json, sys, statistics as st
db = sys.argv[1]
sessions = ",".join(str(int(s)) for s in sys.argv[2].split(","))
c = sqlite3.connect(db)
rows = c.execute("""select n.source_hash, n.knobs, e.status, e.speedup from nodes n join evaluations e
  on e.session_id=n.session_id and e.node_id=n.id where n.session_id in (%s)""" % sessions).fetchall()
by = {}
for h, k, s, sp in rows:
    key = (h, tuple(sorted(json.loads(k).items())))
    by.setdefault(key, []).append(sp if s == 'ok' else None)
typ = {}
for key, v in by.items():
    ok = [x for x in v if x is not None]
    typ[key] = st.median(ok) if ok else None
best = max(v for v in typ.values() if v)
okv = [v for v in typ.values() if v]
within = sum(1 for v in okv if v >= 0.95 * best)
# neighbours: same source, exactly one knob differs
from collections import defaultdict
bysrc = defaultdict(list)
for (h, k), v in typ.items():
    if v: bysrc[h].append((dict(k), v))
lo = 0; lo_within = 0
for h, pts in bysrc.items():
    for i, (a, va) in enumerate(pts):
        nb = [vb for j, (b, vb) in enumerate(pts) if j != i and len(a) == len(b) and sum(a[x] != b[x] for x in a) == 1]
        if nb and all(va > vb for vb in nb):
            lo += 1; lo_within += va >= 0.95 * best
# FDC over the source of the best
bkey = max(typ, key=lambda k: typ[k] or 0)
bh, bk = bkey[0], dict(bkey[1])
d = []; f = []
for a, va in bysrc[bh]:
    d.append(sum(a[x] != bk[x] for x in a)); f.append(va)
fdc = st.correlation(d, f) if len(set(d)) > 1 else float('nan')
multi = [len(v) for v in by.values()]
cv = []
for v in by.values():
    ok = [x for x in v if x]
    if len(ok) >= 2: cv.append(st.pstdev(ok) / st.mean(ok))
print(json.dumps({"settings": len(typ), "ok": len(okv), "best": round(best, 3), "within5": within,
  "within5_share": round(within / len(okv), 4), "local_optima": lo, "local_optima_within5": lo_within,
  "fdc": round(fdc, 3), "timings_min": min(multi), "timings_max": max(multi),
  "timing_cv_median": round(st.median(cv), 4) if cv else None}))
