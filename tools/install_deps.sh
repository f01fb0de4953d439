#!/bin/sh
# Installs the Debian packages hearth needs to build and test, if any is missing.
# The PyTorch reference scripts need more (--reference), make bench a little (--bench),
# make fuzz clang (--fuzz).
set -e
PKGS="g++ make xz-utils libsentencepiece-dev libpcre2-dev libutf8proc-dev libedit-dev doctest-dev nlohmann-json3-dev g++-aarch64-linux-gnu qemu-user"
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
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
