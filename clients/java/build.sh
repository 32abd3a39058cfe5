#!/usr/bin/env bash
# Builds the clockwatch stepdown client with the JDK alone (no Maven or
# Gradle: neither can fetch plugins offline here):
#   ./build.sh          -> clients/java/build/clockwatch-stepdown.jar
#   ./build.sh test     -> also compiles and runs the tests, which need a
#                          running clockwatch (CLOCKWATCH_STEPDOWN_SOCKET,
#                          CLOCKWATCH_METRICS_URL; clients/clients_test.go
#                          sets them up)
# BUILD_DIR (relative to where it is run) puts the build elsewhere. It prints
# the jar's absolute path, wherever it is run from.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")"
out=${BUILD_DIR:-$PWD/build}
case $out in /*) ;; *) out=$caller/$out ;; esac
rm -rf "$out"
mkdir -p "$out/classes" "$out/test-classes"
javac --release 17 -Xlint:all -Werror -d "$out/classes" $(find src/main/java -name '*.java')
jar --create --file "$out/clockwatch-stepdown.jar" -C "$out/classes" .
echo "$out/clockwatch-stepdown.jar"
if [ "${1:-}" = test ]; then
	javac --release 17 -Xlint:all,-try -Werror -cp "$out/clockwatch-stepdown.jar" -d "$out/test-classes" $(find src/test/java -name '*.java')
	java -cp "$out/clockwatch-stepdown.jar:$out/test-classes" io.clockwatch.stepdown.StepdownClientTest README.md
fi
