#!/bin/sh
# Install what corokit needs to build and test, when it is missing.
# Usage: tools/deps.sh [extra Debian packages...]
# Does nothing when everything is there; uses sudo when not root.
set -eu
pkgs="libck-dev libcriterion-dev make gcc $*"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps.sh: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
