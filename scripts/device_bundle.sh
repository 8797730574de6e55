#!/usr/bin/env bash
# Builds, on this CPU machine with nvcc, what `scripts/device_check.sh --prebuilt` runs on a GPU
# machine, and packs it into .device-bundle/ (ignored by git; it travels with the working tree):
#   build.tar.xz  the CUDA build (sm_90, Release, no MPI): wxcast, the CUDA module, the `cuda`
#                 tests, the CLI tests' CTest files and bench_cuda, at their paths in this tree
#   libs.tar.xz   libs/: every shared library those programs load that a bare CUDA image may lack
#                 (OpenBLAS, FFTW, netCDF, eccodes, libyaml, libpng and what they pull in), found
#                 with ldd; bin/: ncdump and grib_ls (the end-to-end tests read the products with
#                 them); eccodes/: eccodes' definitions and samples (GRIB2 writing needs them). Not bundled: glibc and the C++ runtime (the GPU machine's are newer and
#                 compatible), and the CUDA libraries (the GPU machine's match its driver).
#   source_dir, build_dir, made   where it was built (CMake's paths are absolute), and when/what
# Why: a GPU machine lent for minutes has CUDA but often none of the Debian packages and no
# network; building there costs device time. Usage: bash scripts/device_bundle.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
DEST=.device-bundle
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
command -v nvcc >/dev/null || { echo "device_bundle: nvcc not found: cannot build the CUDA backend" >&2; exit 1; }
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWX_CUDA=ON -DWX_CUDA_ARCHS=90 -DWX_MPI=OFF >/dev/null
targets=$(ls tests/unit/test_cuda_*.c | sed 's|.*/\(test_cuda_[a-z0-9_]*\)\.c|\1|')
cmake --build "$BUILD" -j"$(nproc)" --target wxcast $targets bench_cuda >/dev/null
bins=("$BUILD/wxcast" "$BUILD/libwxcast_cuda.so" "$BUILD/tests/bench_cuda")
for t in $targets; do bins+=("$BUILD/tests/$t"); done
# only what this script writes: other files a session keeps there (its run scripts) stay
rm -rf "$DEST/libs" "$DEST/bin" "$DEST/eccodes" "$DEST/build.tar.xz" "$DEST/libs.tar.xz"
mkdir -p "$DEST/libs" "$DEST/bin" "$DEST/eccodes"
cp -L "$(command -v ncdump)" "$(command -v grib_ls)" "$DEST/bin/"
# where eccodes looks by default (codes_info -d / -s print it)
ecdefs=$(codes_info -d 2>/dev/null || echo /usr/share/eccodes/definitions)
ecsamples=$(codes_info -s 2>/dev/null || echo /usr/share/eccodes/samples)
cp -r "$ecdefs" "$DEST/eccodes/definitions" && cp -r "$ecsamples" "$DEST/eccodes/samples"
# ldd gives the whole closure; keep what a bare image may lack
for b in "${bins[@]}" "$DEST"/bin/*; do ldd "$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so|/lib(cudart|cublas|cublasLt|cufft|nccl|wxcast_cuda)\.so' |
  while read -r lib; do cp -L "$lib" "$DEST/libs/"; done
tar -cJf "$DEST/libs.tar.xz" -C "$DEST" libs bin eccodes
rm -rf "$DEST/libs" "$DEST/bin" "$DEST/eccodes"
tar -cJf "$DEST/build.tar.xz" "${bins[@]}" "$BUILD/generated" $(find "$BUILD" -name CTestTestfile.cmake)
echo "$PWD" >"$DEST/source_dir"
echo "$BUILD" >"$DEST/build_dir"
echo "built $(date -u +%Y-%m-%dT%H:%MZ) at $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')" >"$DEST/made"
du -sh "$DEST"/*.tar.xz
cat "$DEST/made"
