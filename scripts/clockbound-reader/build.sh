#!/usr/bin/env bash
# Builds cbread: AWS ClockBound's own shared memory reader (clock-bound-shm)
# and its VMClock client (clock-bound-vmclock), from a checkout of
# github.com/aws/clock-bound given as $1, behind a small main, offline, with Debian's librust-*-dev packages standing in for
# crates.io. The one change to ClockBound's build: errno 0.2 (Debian bookworm)
# instead of 0.3, whose errno() and Errno(i32) are the same API. Prints the
# binary's path; internal/transport/segment's TestClockBoundRustReader runs it when
# CLOCKWATCH_CLOCKBOUND_READER names it, scripts/bench-boundedtime.sh times it.
# clock-bound-vmclock's tracing-subscriber is left out: only its tests use it.
#
#   apt-get install librust-nix-dev librust-byteorder-dev librust-errno-dev librust-libc-dev librust-tracing-dev
#   scripts/clockbound-reader/build.sh ~/src/clock-bound
set -euo pipefail
src=${1:?usage: build.sh CLOCK_BOUND_CHECKOUT}
here=$(cd "$(dirname "$0")" && pwd)
out=${CLOCKBOUND_READER_DIR:-$(mktemp -d)}
mkdir -p "$out/clock-bound-shm" "$out/clock-bound-vmclock" "$out/.cargo"
cp -r "$src/clock-bound-shm/src" "$out/clock-bound-shm/"
cp -r "$src/clock-bound-vmclock/src" "$out/clock-bound-vmclock/"
cp -r "$here/cbread" "$out/"
cat >"$out/.cargo/config.toml" <<'TOML'
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[net]
offline = true
TOML
cat >"$out/Cargo.toml" <<'TOML'
[workspace]
members = ["clock-bound-shm", "clock-bound-vmclock", "cbread"]
resolver = "2"
TOML
cat >"$out/clock-bound-shm/Cargo.toml" <<'TOML'
[package]
name = "clock-bound-shm"
version = "2.0.2"
edition = "2021"
[features]
writer = []
[dependencies]
byteorder = "1"
errno = "0.2"
libc = { version = "0.2", default-features = false, features = ["extra_traits"] }
nix = { version = "0.26", features = ["feature", "time"] }
TOML
cat >"$out/clock-bound-vmclock/Cargo.toml" <<'TOML'
[package]
name = "clock-bound-vmclock"
version = "2.0.2"
edition = "2021"
[dependencies]
clock-bound-shm = { path = "../clock-bound-shm" }
byteorder = "1"
errno = "0.2"
libc = { version = "0.2", default-features = false, features = ["extra_traits"] }
nix = { version = "0.26", features = ["feature", "time"] }
tracing = "0.1"
TOML
(cd "$out" && cargo build --release --quiet)
echo "$out/target/release/cbread"
