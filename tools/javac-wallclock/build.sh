#!/usr/bin/env bash
# Builds the WallClock javac plugin with the JDK alone (no Maven or Gradle):
#   ./build.sh          -> dist/clockwatch-wallclock.jar (DIST overrides the directory)
#   ./build.sh test     -> also compiles and runs the tests against testdata/
set -euo pipefail
cd "$(dirname "$0")"
dist=${DIST:-../../dist}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
mkdir -p "$dist" "$build/classes" "$build/test-classes"
javac --release 17 -Xlint:all -Werror -d "$build/classes" $(find src/main/java -name '*.java')
cp -r src/main/resources/. "$build/classes/"
jar --create --file "$dist/clockwatch-wallclock.jar" -C "$build/classes" .
echo "$dist/clockwatch-wallclock.jar"
if [ "${1:-}" = test ]; then
	javac --release 17 -Xlint:all -Werror -cp "$dist/clockwatch-wallclock.jar" -d "$build/test-classes" $(find src/test/java -name '*.java')
	java -cp "$dist/clockwatch-wallclock.jar:$build/test-classes" io.clockwatch.wallclock.WallClockTest "$dist/clockwatch-wallclock.jar" testdata
fi
