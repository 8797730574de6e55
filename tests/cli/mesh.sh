#!/usr/bin/env bash
# `wxcast mesh`: published counts through the CLI (1deg/M5), JSON output, usage errors (exit 2).
# Called as: bash mesh.sh WXCAST SRCDIR
set -u
wx=$1
fail=0 pass=0
err=$(mktemp)
check() { if eval "$2"; then pass=$((pass + 1)); else echo "FAIL: $1"; fail=$((fail + 1)); fi; }

out=$("$wx" mesh --levels 5 --grid 1 --fraction 0.6 --json)
check "mesh exits 0" "[ $? -eq 0 ]"
# Published counts (shared/reference/graphcast.md §1.2-1.4), read back from the JSON.
jq_py() { python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($1) else 1)" <<<"$out"; }
check "JSON: M5 nodes 10242" "jq_py 'd[\"mesh_nodes\"] == 10242'"
check "JSON: multi-mesh 81900" "jq_py 'd[\"multimesh_edges\"] == 81900'"
check "JSON: grid->mesh 101892" "jq_py 'd[\"grid2mesh_edges\"] == 101892'"
check "JSON: mesh->grid 195480" "jq_py 'd[\"mesh2grid_edges\"] == 195480'"
check "JSON: M3 642 nodes, 1280 faces, 3840 edges" "jq_py 'd[\"levels\"][3] == {\"level\": 3, \"nodes\": 642, \"faces\": 1280, \"edges\": 3840, \"max_edge\": d[\"levels\"][3][\"max_edge\"]}'"
check "JSON: 65160 grid points, build time" "jq_py 'd[\"grid\"][\"points\"] == 65160 and d[\"build_seconds\"] >= 0'"

table=$("$wx" mesh --levels 2 --grid 2)
check "table lists the multi-mesh" "grep -q 'multi-mesh M0..M2: 162 nodes, 1260 directed edges' <<<\"\$table\""
check "table has a build time" "grep -q '^build time: ' <<<\"\$table\""

for bad in "" "--levels" "--levels 9" "--levels 2.5" "--levels 3 --grid 0.7" "--levels 3 --fraction x" "--levels 3 --bogus"; do
  "$wx" mesh $bad >/dev/null 2>"$err"
  rc=$?
  check "usage error for '$bad' exits 2 (got $rc)" "[ $rc -eq 2 ] && grep -q '^wxcast: error: ' \"\$err\""
done
rm -f "$err"
"$wx" mesh --help | grep -q -- '--fraction'
check "help lists --fraction" "[ $? -eq 0 ]"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
