#!/usr/bin/env bash
# wxcast import-weights / export-weights: PyTorch safetensors (NVlabs names under "module.", written
# by hand by tests/ref/ref_weights.py) -> checkpoint -> safetensors -> checkpoint -> safetensors
# gives identical files; the exported tensors carry the plain NVlabs names with the torch values;
# a missing tensor, a wrong shape, an unknown tensor and a damaged header each exit 1 with one
# "wxcast: error:" line naming the tensor or file; missing options exit 2.
# Usage: weights.sh WXCAST SRCDIR
set -u
W="$1"
SRC="$2"
FX="$SRC/tests/ref/fixtures"
T=$(mktemp -d /tmp/wx_cli_weights.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
# u64 little-endian header length of a safetensors file, and its header text
hdr() { od -An -t u8 -N 8 "$1" | tr -d ' '; }
header_text() { head -c $((8 + $(hdr "$1"))) "$1" | tail -c "$(hdr "$1")"; }

CFG="$FX/weights_tiny.yaml"
run import-weights "$FX/weights_tiny.safetensors" --config "$CFG" --output "$T/a.ckpt"
[ "$rc" -eq 0 ] && [ -s "$T/a.ckpt" ]; check "import torch weights (rc $rc: $err)" $?
run export-weights "$T/a.ckpt" --output "$T/b.safetensors"
[ "$rc" -eq 0 ]; check "export (rc $rc: $err)" $?
run import-weights "$T/b.safetensors" --config "$CFG" --output "$T/c.ckpt"
[ "$rc" -eq 0 ]; check "re-import the export (rc $rc: $err)" $?
run export-weights "$T/c.ckpt" --output "$T/d.safetensors"
cmp -s "$T/b.safetensors" "$T/d.safetensors"; check "export -> import -> export is byte-identical" $?
h=$(header_text "$T/b.safetensors")
[[ "$h" == *'"pos_embed":{"dtype":"F32","shape":[1,32,32]'* ]] && [[ "$h" != *module.* ]] &&
    [[ "$h" == *'"norm.weight"'* ]] && [[ "$h" == *'"wxcast_model":'* ]]
check "export: plain NVlabs names, F32, norm kept, model config in metadata" $?
[ $(( (8 + $(hdr "$T/b.safetensors")) % 8 )) -eq 0 ]; check "export: data 8-byte aligned" $?
# The tensor bytes are the torch file's: same data buffer (both files are in NVlabs order).
tail -c +$((9 + $(hdr "$FX/weights_tiny.safetensors"))) "$FX/weights_tiny.safetensors" >"$T/data_in"
tail -c +$((9 + $(hdr "$T/b.safetensors"))) "$T/b.safetensors" >"$T/data_out"
cmp -s "$T/data_in" "$T/data_out"; check "export: tensor bytes equal the torch file's" $?

# Errors, exit 1, naming what is wrong.
sed 's/^depth: 2/depth: 3/' "$CFG" >"$T/deep.yaml"
run import-weights "$FX/weights_tiny.safetensors" --config "$T/deep.yaml" --output "$T/x.ckpt"
fails 1 "missing tensor" "weights_tiny.safetensors" "missing tensor 'blocks.2.norm1.weight'"
sed 's/^embed_dim: 32/embed_dim: 16/' "$CFG" >"$T/narrow.yaml"
run import-weights "$FX/weights_tiny.safetensors" --config "$T/narrow.yaml" --output "$T/x.ckpt"
fails 1 "wrong shape" "tensor 'module.pos_embed' has shape (1, 32, 32)" "expects (1, 32, 16)"
sed 's/^depth: 2/depth: 1/' "$CFG" >"$T/shallow.yaml"
run import-weights "$FX/weights_tiny.safetensors" --config "$T/shallow.yaml" --output "$T/x.ckpt"
fails 1 "unknown tensor" "'module.blocks.1.norm1.weight' is not a parameter"
head -c 200 "$FX/weights_tiny.safetensors" >"$T/cut.safetensors"
run import-weights "$T/cut.safetensors" --config "$CFG" --output "$T/x.ckpt"
fails 1 "truncated header" "cut.safetensors" "header length"
{ head -c 8 "$FX/weights_tiny.safetensors"; printf '[%*s' $(( $(hdr "$FX/weights_tiny.safetensors") - 1 )) ''; } >"$T/json.safetensors"
run import-weights "$T/json.safetensors" --config "$CFG" --output "$T/x.ckpt"
fails 1 "bad header JSON" "json.safetensors" "bad safetensors header at byte 8"
[ ! -e "$T/x.ckpt" ]; check "no checkpoint written on failure" $?
printf 'not a checkpoint' >"$T/bad.ckpt"
run export-weights "$T/bad.ckpt" --output "$T/x.safetensors"
fails 1 "bad checkpoint" "bad.ckpt"
[ ! -e "$T/x.safetensors" ]; check "no safetensors written on failure" $?
run import-weights "$FX/weights_tiny.safetensors" --output "$T/x.ckpt"
fails 2 "no --config" "--config is required"
run export-weights "$T/a.ckpt"
fails 2 "no --output" "--output is required"

checks_summary
