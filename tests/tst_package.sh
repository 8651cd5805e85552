#!/usr/bin/env bash
# The Debian package as a user gets it (CTest label `package`): `cpack -G DEB` in the build
# folder, the packages extracted with `dpkg -x` into a scratch root, the installed hone run from
# there with no source-tree variables (its resources must come from ROOT/usr/share/hone), a real
# evaluation of a bundled CPU problem, and lintian with no errors.
# usage: tst_package.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in cpack dpkg-deb lintian; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps)"; exit 77; }
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hone-package.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# 1. Build the packages (cpack installs the build into its own staging folder).
(cd "$build" && cpack -G DEB -B "$scratch/out" >"$scratch/cpack.log" 2>&1) \
  || { cat "$scratch/cpack.log"; fail "cpack -G DEB failed"; }
main=$(ls "$scratch"/out/hone_*.deb)
demo=$(ls "$scratch"/out/hone-demo_*.deb)
echo "built $(basename "$main") ($(du -h "$main" | cut -f1)), $(basename "$demo") ($(du -h "$demo" | cut -f1))"

# 2. What the package holds and declares.
fields=$(dpkg-deb -f "$main" Package Depends Suggests Maintainer)
echo "$fields"
# The package names of a field, one per line, without versions.
names() { sed -n "s/^$1: //p" <<<"$fields" | tr ',' '\n' | sed 's/^ *//; s/[ (].*//' | sed '/^$/d'; }
for dep in g++ libgomp1 bubblewrap; do
  names Depends | grep -qxF "$dep" || fail "Depends lacks $dep"
done
names Suggests | grep -qxF nvidia-cuda-toolkit || fail "Suggests lacks CUDA (nvidia-cuda-toolkit)"
names Suggests | grep -qxF hipcc || fail "Suggests lacks ROCm (hipcc)"
contents=$(dpkg-deb -c "$main" | awk '{print $6}')
for f in ./usr/bin/hone ./usr/bin/hone-worker ./usr/share/man/man1/hone.1.gz ./usr/share/man/man1/hone-worker.1.gz \
    ./usr/share/bash-completion/completions/hone ./usr/share/zsh/vendor-completions/_hone \
    ./usr/share/doc/hone/copyright ./usr/share/doc/hone/changelog.gz ./usr/share/icons/hicolor/scalable/apps/hone.svg \
    ./usr/share/icons/hicolor/48x48/apps/hone.png ./usr/share/hone/problems/cpu/softmax/problem.toml \
    ./usr/share/hone/bench/torch_bench.py; do
  grep -qxF "$f" <<<"$contents" || fail "the package lacks $f"
done
if grep -q '^./usr/bin/hone-workbench$' <<<"$contents"; then
  for f in ./usr/share/man/man1/hone-workbench.1.gz ./usr/share/applications/org.example.hone.workbench.desktop \
      ./usr/share/metainfo/org.example.hone.workbench.metainfo.xml; do
    grep -qxF "$f" <<<"$contents" || fail "the package lacks $f"
  done
fi
if grep -q '^./usr/share/hone/demo/' <<<"$contents"; then fail "the demo databases are in the main package"; fi
demo_contents=$(dpkg-deb -c "$demo")
grep -q '/usr/share/hone/demo/.*\.db$' <<<"$demo_contents" || fail "hone-demo holds no demo database"

# 3. The installed tree, run with nothing pointing at the source or build tree.
root="$scratch/root"
dpkg -x "$main" "$root"
clean_env=(env -i PATH=/usr/bin:/bin HOME="$scratch/home" LANG=C.UTF-8 HONE_CACHE_DIR="$scratch/cache")
[ "${HONE_NO_SANDBOX:-0}" = 1 ] && clean_env+=(HONE_NO_SANDBOX=1)
mkdir -p "$scratch/home"
version=$("${clean_env[@]}" "$root/usr/bin/hone" --version)
echo "$version"
grep -qxF "resources $root/usr/share/hone" <<<"$version" || fail "the installed hone does not use its own share/hone"
problem="$root/usr/share/hone/problems/cpu/softmax"
set +e
"${clean_env[@]}" "$root/usr/bin/hone" --store "$scratch/home/hone.db" eval "$problem" "$problem/seeds/naive.cpp" \
  >"$scratch/eval.log" 2>&1
rc=$?
set -e
cat "$scratch/eval.log"
[ "$rc" = 0 ] || fail "hone eval from the installed tree exited $rc"
grep -q '^correct ' "$scratch/eval.log" || fail "hone eval did not report the checks"
grep -q 'speedup' "$scratch/eval.log" || fail "hone eval did not time the candidate"
man_head=$(zcat "$root/usr/share/man/man1/hone.1.gz" | head -n 5)
grep -q '^.TH HONE 1' <<<"$man_head" || fail "hone.1.gz is not hone's man page"
# The desktop entry and the AppStream metadata, where their validators are installed.
for f in "$root"/usr/share/applications/*.desktop; do
  [ -e "$f" ] || continue
  if command -v desktop-file-validate >/dev/null; then desktop-file-validate "$f" || fail "invalid $f"; fi
done
for f in "$root"/usr/share/metainfo/*.xml; do
  [ -e "$f" ] || continue
  if command -v appstreamcli >/dev/null; then appstreamcli validate --no-net "$f" || fail "invalid $f"; fi
done

# 4. lintian: warnings are listed, errors fail the test.
lintian --tag-display-limit 0 "$main" "$demo" >"$scratch/lintian.log" 2>&1 || true
cat "$scratch/lintian.log"
if grep -q '^E: ' "$scratch/lintian.log"; then fail "lintian reports errors"; fi
echo "PASS: package built, installed hone evaluated a bundled problem, lintian reports no errors"
