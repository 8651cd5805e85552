#!/bin/bash
# The GPU sweeps of resources/demo/h100-sweeps-*.db (issue 21): every admissible knob setting of
# every seed of a problem, evaluated once on the GPU through the full harness (compile, checks on
# the problem's small shapes with 3 seeds, timing, re-check after timing), in a shuffle fixed by
# --seed 1. To fit a 1,000-setting sweep into minutes, each problem is swept as a variant that
# keeps its seeds, checks and tolerances and times ONE of its bench shapes (below); the speedups
# are for that shape, not the problem's weighted bench set.
#   bash gpu-sweeps.sh BUNDLE STORE_DIR PROBLEMS_DIR SECONDS PROBLEM...
# BUNDLE: scripts/device-bundle's output; STORE_DIR: where PROBLEM.db is written (or resumed:
# a PROBLEM.db already there is continued with `hone resume`); PROBLEMS_DIR: resources/problems/ads.
# The problems run one after another until SECONDS have passed (then SIGTERM: the evaluations
# so far stay stored, and a later call resumes them).
set -u
B=$1; S=$2; P=$3; deadline=$(( $(date +%s) + $4 )); shift 4
declare -A BENCH=(
  [layernorm]='{ M = 32768, N = 1024, weight = 1 }'
  [dot_interaction]='{ B = 4096, F = 27, D = 128, P = 351, weight = 1 }'
  [rmsnorm_gate]='{ M = 32768, N = 2560, weight = 1 }'
)
mkdir -p "$S" /tmp/sweep-problems
for p in "$@"; do
  src=$P/$p; dst=/tmp/sweep-problems/$p
  rm -rf "$dst"; cp -r "$src" "$dst"
  # The bench list replaced by one shape (a multi-line `bench = [ ... ]` block).
  awk -v shape="${BENCH[$p]}" '
    /^bench = \[/ { print "bench = [ " shape " ]"; skip = ($0 !~ /\]/); next }
    skip { if ($0 ~ /^\]/) skip = 0; next }
    { print }' "$src/problem.toml" > "$dst/problem.toml"
  H="$B/bin/hone --worker $B/bin/hone-worker --store $S/$p.db --no-skills"
  s=$(date +%s); T=$(( deadline - s ))
  if [ $T -lt 20 ]; then echo "== $p: not run (time)" >> "$S/sweeps.log"; continue; fi
  if [ -e "$S/$p.db" ]; then
    timeout -k 30 -s TERM "$T" $H resume 1 > "$S/$p.log" 2>&1
  else
    timeout -k 30 -s TERM "$T" $H run "$dst" --target cuda --synth grid --budget 100000 --workers 16 \
      --samples 20 --seed 1 --no-warm-start --no-reverify > "$S/$p.log" 2>&1
  fi
  echo "== $p: rc=$? in $(( $(date +%s) - s )) s" >> "$S/sweeps.log"
  tail -n 12 "$S/$p.log" >> "$S/sweeps.log"
done
