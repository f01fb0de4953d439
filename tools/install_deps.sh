#!/bin/sh
# Installs the Debian packages hearth needs to build and test, if any is missing, and then
# the server tests' one npm package (tests/server: npm ci, when its lock file is newer).
# The PyTorch reference scripts need more (--reference), make bench a little (--bench),
# make fuzz clang (--fuzz).
set -e
cd "$(dirname "$0")/.."
PKGS="g++ make xz-utils libsentencepiece-dev libpcre2-dev libutf8proc-dev libedit-dev doctest-dev nlohmann-json3-dev g++-aarch64-linux-gnu qemu-user"
# run --server: cpp-httplib (its -dev package brings the OpenSSL, zlib and brotli headers its
# header needs).
PKGS="$PKGS libcpp-httplib-dev"
# The server's tests (tests/server): Node.js >= 18 with npm, and a headless browser.
PKGS="$PKGS chromium chromium-driver"
if [ "${1:-}" = "--reference" ]; then
    PKGS="$PKGS python3-torch python3-numpy python3-sentencepiece libopenblas0-pthread"
elif [ "${1:-}" = "--fuzz" ]; then
    PKGS="$PKGS clang libclang-rt-dev libomp-dev"
elif [ "${1:-}" = "--bench" ]; then
    PKGS="$PKGS python3-numpy util-linux-extra"
fi
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node.js and npm go by their commands: a Node.js from elsewhere (NodeSource's nodejs
# package bundles npm, and conflicts with Debian's npm) serves as well.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
    echo "installing:$missing"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
fi
if [ ! -d tests/server/node_modules ] || [ tests/server/package-lock.json -nt tests/server/node_modules ]; then
    echo "installing tests/server's npm packages (npm ci)"
    npm ci --prefix tests/server --no-audit --no-fund
    touch tests/server/node_modules
fi
