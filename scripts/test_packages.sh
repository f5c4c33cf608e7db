#!/usr/bin/env bash
# The Debian packages the tests' real parts need, each group only where one of its commands is
# missing, and only where this machine lets us install (root and apt-get); else a note says which
# tests will be skipped. Every missing group is installed after ONE `apt-get update`: on a fresh
# machine an index update costs seconds to a minute, and four targets each updating paid it four
# times. `make test` runs this beside the Python setup (make -j2), which it does not depend on.
#   scripts/test_packages.sh [browser] [prometheus] [shells] [slurm]   (no argument: all four)
set -u
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(browser prometheus shells slurm)

# group -> the commands that must be found, the packages that give them, apt flags, what is skipped
commands() {
  case $1 in
    browser) echo "chromium|chromium-browser" ;;
    prometheus) echo "prometheus promtool" ;;
    shells) echo "dash zsh" ;;
    slurm) echo "slurmctld slurmd munged slurmdbd mariadbd" ;;
  esac
}
packages() {
  case $1 in
    browser) echo "chromium" ;;  # with its recommended fonts: the pages are drawn as a reader sees them
    prometheus) echo "--no-install-recommends prometheus" ;;
    shells) echo "--no-install-recommends dash zsh" ;;
    # a real one-node Slurm; MariaDB behind slurmdbd for sacct (tests/support/slurm.py)
    slurm) echo "--no-install-recommends slurmctld slurmd slurm-client munge slurmdbd mariadb-server" ;;
  esac
}
named() {
  case $1 in
    browser) echo "chromium" ;;
    prometheus) echo "prometheus" ;;
    shells) echo "dash or zsh" ;;
    slurm) echo "slurm" ;;
  esac
}
skipped() {
  case $1 in
    browser) echo "browser tests" ;;
    prometheus) echo "its server tests" ;;
    shells) echo "their transcript tests" ;;
    slurm) echo "its live test" ;;
  esac
}

present() {  # every command of the group found (a|b: either)
  local c alt found
  for c in $(commands "$1"); do
    found=
    for alt in ${c//|/ }; do command -v "$alt" >/dev/null 2>&1 && found=1; done
    [ -n "$found" ] || return 1
  done
}

missing=()
for g in "${groups[@]}"; do
  present "$g" || missing+=("$g")
done
[ ${#missing[@]} -gt 0 ] || exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  for g in "${missing[@]}"; do echo "note: no $(named "$g") and no root apt-get; $(skipped "$g") will be skipped"; done
  exit 0
fi
updated=
apt-get update -qq >/dev/null 2>&1 && updated=1
for g in "${missing[@]}"; do
  # shellcheck disable=SC2046 # the flags and package names are words
  [ -n "$updated" ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(packages "$g") >/dev/null 2>&1 \
    || echo "note: could not install $(named "$g"); $(skipped "$g") will be skipped"
done
exit 0
