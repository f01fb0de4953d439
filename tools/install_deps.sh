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
# make test checks the code's format with clang-format 14 (tools/check_format.sh), and builds
# one set of kernel tests with clang (and its OpenMP, libomp) to keep the code clang-clean;
# the Makefile asks pkg-config for the libraries' flags.
PKGS="$PKGS clang-format clang libomp-dev pkg-config"
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
# The aarch64 end-to-end test (tests/aarch64/run_e2e.sh) links run and quantize for arm64
# against Debian's arm64 libraries, installed beside the host's (multiarch: dpkg's foreign
# architecture arm64). Debian's archive serves arm64 from the same address; Ubuntu's does not
# (ports.ubuntu.com), so elsewhere it is done only where arm64 is already a foreign architecture.
ARM64_PKGS="libc6:arm64 libstdc++6:arm64 libgomp1:arm64 libpcre2-dev:arm64 libutf8proc-dev:arm64 libedit-dev:arm64 libcpp-httplib-dev:arm64"
arm64=""
if [ "$(dpkg --print-architecture)" = amd64 ]; then
    if dpkg --print-foreign-architectures | grep -qx arm64; then
        arm64=yes
    elif grep -qx 'ID=debian' /etc/os-release 2>/dev/null; then
        arm64=add
    else
        echo "note: arm64 is not a foreign architecture here (dpkg --add-architecture arm64, with arm64 sources):" \
            "the aarch64 end-to-end test will say it skipped"
    fi
fi
[ -n "$arm64" ] && PKGS="$PKGS $ARM64_PKGS"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
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
    [ "$arm64" = add ] && $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
fi
# SentencePiece's packages are not multiarch (the arm64 one would replace the amd64 one): the
# arm64 library is unpacked from its packages into a folder of its own, which the Makefile's
# arm64 run and quantize link and find at run time (AARCH64_SENTENCEPIECE, their rpath).
ARM64_SP=/opt/hearth-arm64
if [ -n "$arm64" ] && [ ! -e $ARM64_SP/usr/lib/aarch64-linux-gnu/libsentencepiece.so ]; then
    echo "unpacking libsentencepiece0:arm64 and libsentencepiece-dev:arm64 into $ARM64_SP"
    debs=$(mktemp -d)
    (cd "$debs" && apt-get download libsentencepiece0:arm64 libsentencepiece-dev:arm64)
    for deb in "$debs"/*.deb; do $SUDO dpkg-deb -x "$deb" $ARM64_SP; done
    rm -rf "$debs"
fi
if [ ! -d tests/server/node_modules ] || [ tests/server/package-lock.json -nt tests/server/node_modules ]; then
    echo "installing tests/server's npm packages (npm ci)"
    npm ci --prefix tests/server --no-audit --no-fund
    touch tests/server/node_modules
fi
