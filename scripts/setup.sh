#!/usr/bin/env bash
# Installs every Debian package wxcast's build, tests and reference scripts need, then configures
# and builds into build/. Idempotent and quiet: packages already present are not reinstalled.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config
  libopenblas-dev libfftw3-dev libnetcdf-dev netcdf-bin
  libeccodes-dev libeccodes-tools libyaml-dev libpng-dev
  zlib1g-dev libopenmpi-dev openmpi-bin
  python3-torch python3-numpy
  python3-xarray python3-cfgrib python3-netcdf4 python3-matplotlib python3-yaml
  gmt-gshhg-low
  chromium chromium-driver python3-pil
  cdo
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_type=${WX_BUILD_TYPE:-Release}
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" ${WX_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)" 2>&1 | grep -E "error|warning:" || true
test -x build/wxcast
echo "setup: build/wxcast ready"
