#!/usr/bin/env bash
# Build the optional avo_native extension (native/) and install it into PYTHON's
# environment (default: python3). avo behaves the same without it; it is only faster.
#   bash scripts/build-native.sh [PYTHON]
# Without cargo this says so and exits 0. Crates come from the committed
# Cargo.lock: fetched once from crates.io, then the build works offline.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${1:-python3}"
if ! command -v cargo >/dev/null 2>&1; then
    echo "build-native: cargo is not on PATH: avo_native not built (the kernel uses its pure-Python code)"
    exit 0
fi
if ! cargo fetch --locked --manifest-path native/Cargo.toml --quiet 2>/dev/null; then
    echo "build-native: crates.io unreachable; building from the crates already in ~/.cargo"
fi
"$python" -m pip install --quiet --disable-pip-version-check "maturin>=1.7,<2"
# The build backend runs the `maturin` command, so the environment's scripts go first on PATH.
scripts=$("$python" -c "import sysconfig; print(sysconfig.get_path('scripts'))")
started=$(date +%s)
PATH="$scripts:$PATH" CARGO_NET_OFFLINE=true "$python" -m pip install --quiet --disable-pip-version-check \
    --no-build-isolation --no-deps --force-reinstall ./native
"$python" -c "import avo_native; print(f'build-native: avo_native {avo_native.version()} built and installed ({len(avo_native.functions())} functions)')"
echo "build-native: took $(( $(date +%s) - started )) s"
