#!/bin/sh
# Installs the Debian packages hearth needs to build and test, if any is missing, and then
# the server tests' one npm package (tests/server: npm ci, when its lock file is newer).
# The PyTorch reference scripts need more (--reference), make bench a little (--bench),
# make fuzz clang (--fuzz).
set -e
cd "$(dirname "$0")/.."
# SKIP_DEPS=1: the packages are the user's business (another system, or no root).
[ -n "${SKIP_DEPS:-}" ] && exit 0
# Elsewhere than Debian and Ubuntu (no dpkg and apt-get): say what to install, and stop. These
# names are the distributions' own; only the Debian list is tested here (README, "Build on
# your machine").
if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    echo "make deps installs packages with apt-get (Debian, Ubuntu) only. On this system, install:"
    echo "  Fedora: sudo dnf install gcc-c++ make xz sentencepiece-devel pcre2-devel utf8proc-devel libedit-devel \\"
    echo "          doctest-devel json-devel cpp-httplib-devel nodejs npm chromium chromedriver"
    echo "  Arch:   sudo pacman -S --needed base-devel xz sentencepiece pcre2 libutf8proc libedit doctest nlohmann-json \\"
    echo "          cpp-httplib nodejs npm chromium"
    echo "  macOS:  brew install sentencepiece pcre2 utf8proc nlohmann-json cpp-httplib doctest libomp node"
    echo "          (libedit comes with the system; Apple clang needs -Xpreprocessor -fopenmp -lomp)"
    echo "then run make again with SKIP_DEPS=1. The aarch64 cross-compiler and qemu-user are for the NEON tests only."
    exit 1
fi
PKGS="g++ make xz-utils libsentencepiece-dev libpcre2-dev libutf8proc-dev libedit-dev doctest-dev nlohmann-json3-dev g++-aarch64-linux-gnu qemu-user"
# make test checks the code's format with clang-format 14 (tools/check_format.sh).
PKGS="$PKGS clang-format"
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
