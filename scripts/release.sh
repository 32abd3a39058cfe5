#!/usr/bin/env bash
# Checks that a release can be tagged and prints the tags to push.
#
# clockwatch is two Go modules: github.com/clockwatch/clockwatch (the daemon,
# tags vX.Y.Z) and github.com/clockwatch/clockwatch/stepdown (the client,
# tags stepdown/vX.Y.Z). `go install .../cmd/clockwatch@vX.Y.Z` resolves the
# client at the version the daemon's go.mod requires, so both are released
# together at the version of the VERSION file. This script checks:
#   - VERSION is X.Y.Z;
#   - go.mod and every example's go.mod (examples/*/go.mod) require the client at vX.Y.Z;
#   - CHANGELOG.md has a "## X.Y.Z" section;
#   - neither tag exists yet, and the work tree is clean (in a git checkout).
# It changes nothing; it prints the git commands that tag and push.
#
# Environment: ROOT, the tree to check (default: this repository).
set -euo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT"
fail=0
problem() { echo "release: $*" >&2; fail=1; }

v=$(tr -d ' \n' <VERSION 2>/dev/null || true)
if ! [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
	problem "VERSION: want X.Y.Z, got \"$v\""
fi
for mod in go.mod examples/*/go.mod; do
	[ -f "$mod" ] || continue
	got=$(awk '$1 == "github.com/clockwatch/clockwatch/stepdown" && $2 ~ /^v/ {print $2; exit} $1 == "require" && $2 == "github.com/clockwatch/clockwatch/stepdown" {print $3; exit}' "$mod")
	if [ "$got" != "v$v" ]; then
		problem "$mod requires github.com/clockwatch/clockwatch/stepdown ${got:-(not at all)}, VERSION says v$v: set it to v$v (go.work and the replace lines keep local builds on ./stepdown)"
	fi
done
if ! grep -q "^## $v\b" CHANGELOG.md 2>/dev/null; then
	problem "CHANGELOG.md has no \"## $v\" section: say what changed"
fi
if git rev-parse HEAD >/dev/null 2>&1; then
	for tag in "v$v" "stepdown/v$v"; do
		if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
			problem "tag $tag exists already: bump VERSION"
		fi
	done
	if [ -n "$(git status --porcelain)" ]; then
		problem "the work tree has uncommitted changes: release a commit"
	fi
fi
if [ "$fail" != 0 ]; then
	exit 1
fi
cat <<TAGS
clockwatch $v and its client are ready to tag; run:

  git tag -a v$v -m "clockwatch $v"
  git tag -a stepdown/v$v -m "clockwatch stepdown client $v"
  git push origin v$v stepdown/v$v
TAGS
