#!/usr/bin/env bash
# wxcast import-weights of DeepMind GraphCast .npz checkpoints (tests/ref/fixtures/gc_import.npz,
# written by graphcast.checkpoint.dump in tests/ref/ref_graphcast_npz.py) into the model of
# configs/model/graphcast_tiny.yaml: the checkpoint holds every parameter (export-weights lists
# them with wxcast's names); a config that disagrees with the file's model_config/task_config
# exits 2 naming the key; a renamed key, a truncated file, a deflated member exit 1 with one
# "wxcast: error:" line naming the file (and key); a --data file with FourCastNet's keys and a
# FourCastNet config are refused;
# nothing is written on error; with --data (tests/ref/fixtures/gc_forecast) it forecasts. The numbers
# are checked in test_weights_gc and test_weights_gc_forecast (vs DeepMind's code).
# Usage: weights_gc.sh WXCAST SRCDIR
set -u
W="$1"
SRC="$2"
NPZ="$SRC/tests/ref/fixtures/gc_import.npz"
CFG="$SRC/configs/model/graphcast_tiny.yaml"
T=$(mktemp -d /tmp/wx_cli_weights_gc.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"

run import-weights "$NPZ" --config "$CFG" --output "$T/a.ckpt"
[ "$rc" -eq 0 ] && [ -s "$T/a.ckpt" ]; check "import the GraphCast .npz (rc $rc: $err)" $?
[[ "$out" == *"a.ckpt: 11636 parameters from "*"gc_import.npz" ]]
check "11636 parameters imported, the result line on stdout (got: $out)" $?
run -q export-weights "$T/a.ckpt" --output "$T/q.safetensors"
[[ "$out" == *"q.safetensors: "*" tensors from "*"a.ckpt" ]]
check "export-weights -q: its result line still on stdout (got: $out)" $?
run export-weights "$T/a.ckpt" --output "$T/a.safetensors"
[ "$rc" -eq 0 ] && grep -qa 'mesh2grid_gnn.decoder_nodes_grid_nodes_mlp.linear_1.weight' \
    "$T/a.safetensors"
check "export-weights of the imported checkpoint (rc $rc: $err)" $?

# The config must be the checkpoint's model: exit 2 naming the key, nothing written.
sed 's/^latent_size: 16/latent_size: 32/' "$CFG" >"$T/latent.yaml"
run import-weights "$NPZ" --config "$T/latent.yaml" --output "$T/x.ckpt"
usage_error "latent size differs" "gc_import.npz" "model_config:latent_size" "latent.yaml"
sed 's/^mesh_max_level: 1/mesh_max_level: 2/' "$CFG" >"$T/mesh.yaml"
run import-weights "$NPZ" --config "$T/mesh.yaml" --output "$T/x.ckpt"
usage_error "mesh size differs" "model_config:mesh_size"
sed 's/^surface_variables: \[2m_temperature,/surface_variables: [2t,/' "$CFG" >"$T/alias.yaml"
run import-weights "$NPZ" --config "$T/alias.yaml" --output "$T/x.ckpt"
usage_error "ERA5 alias for a GraphCast name" "task_config:target_variables" "2m_temperature"
run import-weights "$NPZ" --config "$CFG" --data "$CFG" --output "$T/x.ckpt"
usage_error "--data that is not a GraphCast DATA file (test_weights_gc_forecast: a real one)" \
    "graphcast_tiny.yaml" "unknown key 'type'"
[ ! -e "$T/x.ckpt" ]; check "no checkpoint written on error" $?

# Damaged files: exit 1, one line naming the file and the key.
python3 - "$NPZ" "$T" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
t = sys.argv[2]
old = b"encoder_edges_grid2mesh_mlp/~/linear_0:w.npy"
open(t + "/renamed.npz", "wb").write(b.replace(old, old.replace(b":w.", b":x.")))
open(t + "/trunc.npz", "wb").write(b[: len(b) // 2])
# the first member's compression method, in its central-directory record
c = b.index(b"PK\x01\x02")
open(t + "/deflated.npz", "wb").write(b[: c + 10] + b"\x08" + b[c + 11:])
EOF
run import-weights "$T/renamed.npz" --config "$CFG" --output "$T/x.ckpt"
fails 1 "renamed key" "renamed.npz" "encoder_edges_grid2mesh_mlp/~/linear_0:x" "not a parameter"
run import-weights "$T/trunc.npz" --config "$CFG" --output "$T/x.ckpt"
fails 1 "truncated file" "trunc.npz" "end-of-central-directory"
run import-weights "$T/deflated.npz" --config "$CFG" --output "$T/x.ckpt"
fails 1 "deflated member" "deflated.npz" "linear_0:w" "compressed"
run import-weights "$T/nothere.npz" --config "$CFG" --output "$T/x.ckpt"
fails 1 "missing file" "nothere.npz"
run import-weights "$SRC/tests/ref/fixtures/weights_tiny.safetensors" --config "$CFG" \
    --output "$T/x.ckpt"
fails 1 "safetensors for a GraphCast config" "weights_tiny.safetensors: not a .npz (zip) file; a 'type: graphcast' config" "A wxcast GraphCast checkpoint needs no import"
run import-weights "$NPZ" --config "$SRC/tests/ref/fixtures/weights_tiny.yaml" --output "$T/x.ckpt"
fails 1 ".npz for a FourCastNet config" "gc_import.npz" "type: graphcast"
[ ! -e "$T/x.ckpt" ]; check "no checkpoint written on error" $?

# With --data (DeepMind's stats files, a statics file) the checkpoint forecasts from an analysis
# file (the values: test_weights_gc_forecast); without it forecast refuses the checkpoint.
FC="$SRC/tests/ref/fixtures/gc_forecast"
run import-weights "$FC/model.npz" --config "$CFG" --data "$FC/data.yaml" --output "$T/d.ckpt"
[ "$rc" -eq 0 ] && [ -s "$T/d.ckpt" ]; check "import with --data (rc $rc: $err)" $?
run forecast --model "$T/d.ckpt" --init "$FC/init.nc" --steps 1 --threads 1 --output "$T/f.nc"
[ "$rc" -eq 0 ] && [ -s "$T/f.nc" ]
check "forecast from the imported checkpoint (rc $rc: $err)" $?
run forecast --model "$T/a.ckpt" --init "$FC/init.nc" --steps 1 --threads 1 --output "$T/g.nc"
[ "$rc" -ne 0 ] && [[ "$err" == *"channels_in"* ]] && [ ! -e "$T/g.nc" ]
check "forecast refuses the checkpoint imported without --data (rc $rc: $err)" $?
checks_summary
