#!/usr/bin/env bash
# `wxcast mesh`: published counts through the CLI (1deg/M5), JSON output, usage errors (exit 2).
# Called as: bash mesh.sh WXCAST SRCDIR
set -u
wx=$1
. "$(dirname "$0")/lib/checks.sh"
err=$(mktemp)

out=$("$wx" mesh --levels 5 --grid 1 --fraction 0.6 --json)
ok "mesh exits 0" "[ $? -eq 0 ]"
# Published counts (shared/reference/graphcast.md §1.2-1.4), read back from the JSON.
jq_py() { python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($1) else 1)" <<<"$out"; }
ok "JSON: M5 nodes 10242" "jq_py 'd[\"mesh_nodes\"] == 10242'"
ok "JSON: multi-mesh 81900" "jq_py 'd[\"multimesh_edges\"] == 81900'"
ok "JSON: grid->mesh 101892" "jq_py 'd[\"grid2mesh_edges\"] == 101892'"
ok "JSON: mesh->grid 195480" "jq_py 'd[\"mesh2grid_edges\"] == 195480'"
ok "JSON: M3 642 nodes, 1280 faces, 3840 edges" "jq_py 'd[\"levels\"][3] == {\"level\": 3, \"nodes\": 642, \"faces\": 1280, \"edges\": 3840, \"max_edge\": d[\"levels\"][3][\"max_edge\"]}'"
ok "JSON: 65160 grid points, build time" "jq_py 'd[\"grid\"][\"points\"] == 65160 and d[\"build_seconds\"] >= 0'"

table=$("$wx" mesh --levels 2 --grid 2)
ok "table lists the multi-mesh" "grep -q 'multi-mesh M0..M2: 162 nodes, 1260 directed edges' <<<\"\$table\""
ok "table has a build time" "grep -q '^build time: ' <<<\"\$table\""

for bad in "" "--levels" "--levels 9" "--levels 2.5" "--levels 3 --grid 0.7" "--levels 3 --fraction x" "--levels 3 --bogus"; do
  "$wx" mesh $bad >/dev/null 2>"$err"
  rc=$?
  ok "usage error for '$bad' exits 2 (got $rc)" "[ $rc -eq 2 ] && grep -q '^wxcast: error: ' \"\$err\""
done
rm -f "$err"
"$wx" mesh --help | grep -q -- '--fraction'
ok "help lists --fraction" "[ $? -eq 0 ]"

checks_summary
