#!/usr/bin/env bash
# CI: the end-to-end model, small and on the CPU, with a Hone operator exported by
# `hone export-torch` (embedding_bag_sum of the CPU problems) in place of PyTorch's.
# Exit 77 (skipped) without PyTorch for /usr/bin/python3.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
$PY -c "import torch" 2>/dev/null || { echo "skipped: no PyTorch for $PY (apt install python3-torch)"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"${HONE_CLI:?set HONE_CLI to the hone binary}" export-torch "$SRC/resources/problems/cpu/embedding_bag_sum" \
    "$SRC/resources/problems/cpu/embedding_bag_sum/seeds/tuned.cpp" "$T/pk/embedding_bag_sum"
# A second package in the same process: both register into the `hone` namespace.
"$HONE_CLI" export-torch "$SRC/resources/problems/cpu/softmax" "$SRC/resources/problems/cpu/softmax/seeds/tuned.cpp" \
    "$T/pk/softmax"
$PY "$HERE/dlrm.py" --small --device cpu --hone "$T/pk" --json "$T/m.json"
$PY - "$T/m.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hone_ops"] == ["embedding_bag_sum", "softmax"], d.get("hone_ops")
v = {e["variant"]: e for e in d["variants"]}
for name in ("pytorch eager", "hone eager"):
    assert "samples_per_s" in v[name] and "error" not in v[name], v[name]
ops = [r["op"] for r in v["hone eager"]["breakdown"]]
assert "hone::embedding_bag_sum" in ops, ops          # the Hone op ran in the model
assert "hone::embedding_bag_sum" not in [r["op"] for r in v["pytorch eager"]["breakdown"]]
print("model ok:", {k: round(e.get("samples_per_s", 0)) for k, e in v.items()})
PY
