#!/usr/bin/env bash
# Runs clockwatch-vet and the WallClock javac plugin on the real code bases of
# docs/audit.md and prints every finding, one per line, as
#   project<TAB>path:line<TAB>message (cut to 100 characters)
# then the count per project and the run times. The code comes from the Go
# module proxy (pinned versions) and from Debian (openjdk-17-source, compiled
# with the javac of the same Debian version, fetched with apt-get download into
# the work directory: nothing is installed). docs/audit.md judges each line.
#   scripts/audit-real.sh [go|java|all [PROJECT...]]   (all by default; ~10 min on 2 cores)
#   scripts/audit-real.sh fix     the suggested fixes on the corpus: applied with
#                                 -fix to a copy of each module that has one, then
#                                 built, vetted and its tests run before and after
# Naming projects (etcd, gocron, pool2, jdk, ...) runs only those.
# AUDIT_DIR keeps the downloads between runs (default: a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
what=${1:-all}
shift || true
only=" $* "
want() { [ "$only" = "  " ] || [[ "$only" == *" $1 "* ]]; }
work=${AUDIT_DIR:-$(mktemp -d)}
mkdir -p "$work"
out=$work/findings.tsv
: >"$out"
export GOWORK=off GOFLAGS=-mod=mod

go_project() { # name module@version packages...
	local name=$1 modver=$2
	shift 2
	want "$name" || return 0
	local dir=$work/go-$name
	mkdir -p "$dir"
	(
		cd "$dir"
		[ -f go.mod ] || printf 'module audit%s\n\ngo 1.26.0\n' "$name" >go.mod
		{
			echo '//go:build tools'
			echo
			echo "package audit$name"
			echo
			echo 'import ('
			for p in "$@"; do echo "	_ \"${p%/...}\""; done
			echo ')'
		} >tools.go
		go get "$modver" >/dev/null 2>&1
		go mod tidy >/dev/null 2>&1
		t0=$(date +%s.%N)
		# -test=false: the code that runs, not its tests. Exit 3 means findings.
		"$work/clockwatch-vet" -test=false "$@" 2>"$dir/vet.txt" || [ $? -eq 3 ]
		t1=$(date +%s.%N)
		printf 'time\t%s\t%.1f s\n' "$name" "$(echo "$t1 - $t0" | bc)" >&2
		cache=
		cache=$(go env GOMODCACHE)
		{ grep -E '^/' "$dir/vet.txt" || true; } | sed "s#^$cache/##" |
			awk -v n="$name" '{ i=index($0, ": "); printf "%s\t%s\t%s\n", n, substr($0, 1, i-1), substr($0, i+2, 100) }' >>"$out"
	)
}

# fix_project NAME MODULE@VERSION TEST-PACKAGES: -fix on a copy of the module.
fix_project() {
	local name=$1 modver=$2 tests=$3
	local src
	src=$(go mod download -json "$modver" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
	local dir=$work/fix-$name
	chmod -R u+w "$dir" 2>/dev/null || true
	rm -rf "$dir" "$dir.orig" && cp -r "$src" "$dir" && chmod -R u+w "$dir" && cp -r "$dir" "$dir.orig"
	(
		cd "$dir"
		go mod download all >/dev/null 2>&1 || true
		before= after=
		before=$(go test -count=1 -short -timeout 10m $tests 2>&1 | tail -3 | tr '\n' ' ')
		"$work/clockwatch-vet" -test=false -fix ./... >"$work/fix-$name.log" 2>&1 || true
		printf 'fix\t%s\tfiles changed: %s\n' "$name" "$(diff -rq "$dir.orig" . | wc -l)"
		diff -ru "$dir.orig" . | sed "s#^#fix\t$name\t#" | grep -E '^fix.\S+.[-+][^-+]' || true
		go build ./... && go vet $tests && printf 'fix\t%s\tbuilds and vets\n' "$name"
		after=$(go test -count=1 -short -timeout 10m $tests 2>&1 | tail -3 | tr '\n' ' ')
		printf 'fix\t%s\ttests before: %s\nfix\t%s\ttests after:  %s\n' "$name" "$before" "$name" "$after"
	)
}

if [ "$what" = fix ]; then
	(cd cmd/clockwatch-vet && go build -o "$work/clockwatch-vet" .)
	# The corpus's only fixable finding (docs/audit.md): go-redis's pool wait-time statistic.
	fix_project goredis github.com/redis/go-redis/v9@v9.23.0 ./internal/pool/
	exit 0
fi

if [ "$what" = all ] || [ "$what" = go ]; then
	(cd cmd/clockwatch-vet && go build -o "$work/clockwatch-vet" .)
	go_project etcd go.etcd.io/etcd/client/v3@v3.7.3 go.etcd.io/etcd/client/v3/...
	go_project clientgo k8s.io/client-go@v0.37.2 k8s.io/client-go/tools/leaderelection/...
	go_project raft github.com/hashicorp/raft@v1.8.0 github.com/hashicorp/raft
	go_project redsync github.com/go-redsync/redsync/v4@v4.18.1 github.com/go-redsync/redsync/v4 github.com/go-redsync/redsync/v4/redis/goredis/v9
	# redsync's go-redis pool: the Redis client its locks run on.
	go_project goredis github.com/redis/go-redis/v9@v9.23.0 github.com/redis/go-redis/v9/...
	go_project consul github.com/hashicorp/consul/api@v1.34.5 github.com/hashicorp/consul/api
	# Added for issue 37: clocks behind interfaces, TTL caches, schedulers, gossip.
	go_project ratelimit go.uber.org/ratelimit@v0.3.1 go.uber.org/ratelimit
	go_project gocache github.com/patrickmn/go-cache@v2.1.0+incompatible github.com/patrickmn/go-cache
	go_project bigcache github.com/allegro/bigcache/v3@v3.1.0 github.com/allegro/bigcache/v3/...
	go_project freecache github.com/coocood/freecache@v1.2.7 github.com/coocood/freecache
	go_project gocron github.com/go-co-op/gocron/v2@v2.21.2 github.com/go-co-op/gocron/v2
	go_project memberlist github.com/hashicorp/memberlist@v0.7.0 github.com/hashicorp/memberlist
fi

# java_debian NAME SRCPKG=VERSION TOPDIR FILTER: the sources of a Debian source
# package (the upstream tarball, from deb-src through a private apt list:
# nothing is installed), compiled with the system's javac and the plugin.
# Dependencies Debian ships as jars are on the class path; the others are
# not, and -XDshould-stop.ifError=FLOW lets javac analyse the classes anyway
# (their unresolved names are no reading).
java_debian() {
	local name=$1 src=$2 top=$3 filter=$4
	want "$name" || return 0
	local dir=$work/java-$name
	mkdir -p "$dir"
	(
		cd "$dir"
		if [ ! -d src ]; then
			A="-o Dir::Etc::sourcelist=$work/apt/sources.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$work/apt/lists"
			apt-get $A source --download-only "$src" >/dev/null 2>&1
			mkdir src && tar -xf ./*.orig.tar.* -C src
		fi
		t0=$(date +%s.%N)
		find "src/$top" -name '*.java' | { grep -vE "$filter" || true; } | sort >files.txt
		rm -rf out && mkdir out
		javac --release 8 -proc:none -XDsuppressNotes -XDshould-stop.ifError=FLOW -Xmaxwarns 100000 -Xmaxerrs 100000 \
			-cp "$(find "$work/jars" -name '*.jar' | tr '\n' :)" -processorpath "$work/clockwatch-wallclock.jar" -Xplugin:WallClock \
			-d out @files.txt >log.txt 2>&1 || true
		t1=$(date +%s.%N)
		printf 'time\t%s\t%.1f s (%s files, %s lines, %s unresolved-name errors)\n' "$name" "$(echo "$t1 - $t0" | bc)" \
			"$(wc -l <files.txt)" "$(cat $(cat files.txt) | wc -l)" "$(grep -c ': error:' log.txt || true)" >&2
		{ grep ': warning: \[WallClock' log.txt || true; } | sed "s#^src/$top/##" |
			awk -v n="$name" '{ i=index($0, ": warning: [WallClock"); printf "%s\t%s\t%s\n", n, substr($0, 1, i-1), substr($0, i+11, 110) }' >>"$out"
	)
}

if [ "$what" = all ] || [ "$what" = java ]; then
	DIST=$work ./tools/javac-wallclock/build.sh >/dev/null
	mkdir -p "$work/apt/lists/partial" "$work/jars"
	echo 'deb-src http://deb.debian.org/debian bookworm main' >"$work/apt/sources.list"
	if [ ! -f "$work/jars/.done" ]; then
		apt-get -o Dir::Etc::sourcelist="$work/apt/sources.list" -o Dir::Etc::sourceparts=- \
			-o Dir::State::Lists="$work/apt/lists" update >/dev/null 2>&1
		(cd "$work/jars" && apt-get download libslf4j-java >/dev/null 2>&1 && for d in *.deb; do dpkg-deb -x "$d" x; done && touch .done)
	fi
	java_debian pool2 commons-pool2=2.11.1-1 commons-pool-rel-commons-pool-2.11.1/src/main/java '/proxy/'
	java_debian hikari hikaricp=2.7.9-1 HikariCP-HikariCP-2.7.9/src/main/java 'metrics/(dropwizard|micrometer|prometheus)|hibernate|JavassistProxyFactory'
	java_debian ehcache ehcache=2.6.11-5 ehcache-2.6.11.orig/src/main/java '^$'
fi

if { [ "$what" = all ] || [ "$what" = java ]; } && want jdk; then
	jdk=$work/jdk
	mkdir -p "$jdk"
	(
		cd "$jdk"
		if [ ! -x x/usr/lib/jvm/java-17-openjdk-amd64/bin/javac ]; then
			apt-get download openjdk-17-source >/dev/null 2>&1
			v=$(dpkg-deb -f openjdk-17-source_*.deb Version)
			# The sources must match the class library they are compiled against.
			apt-get download "openjdk-17-jre-headless=$v" "openjdk-17-jdk-headless=$v" >/dev/null 2>&1
			for d in *.deb; do dpkg-deb -x "$d" x; done
		fi
		javac=$jdk/x/usr/lib/jvm/java-17-openjdk-amd64/bin/javac
		rm -rf src stage out
		mkdir src
		mods='java.base java.logging java.management java.naming java.net.http java.rmi jdk.httpserver'
		(cd src && unzip -q ../x/usr/lib/jvm/openjdk-17/lib/src.zip $(for m in $mods; do echo "$m/*"; done))
		# The corpus: every file that reads the wall clock.
		(cd src && grep -rlE 'currentTimeMillis|Instant\.now|new Date\(\)|Calendar\.getInstance|\.millis\(\)' --include=*.java . |
			grep -v module-info.java | sort) >files.txt
		while read -r f; do mkdir -p "stage/$(dirname "$f")" && cp "src/$f" "stage/$f"; done <files.txt
		printf 'time\tjdk\t%s files, %s lines\n' "$(wc -l <files.txt)" "$(cd stage && cat $(cat ../files.txt) | wc -l)" >&2
		for mode in without with; do
			local_t=0
			for m in $mods; do
				rm -rf "out/$m" && mkdir -p "out/$m"
				plugin=()
				[ $mode = with ] && plugin=(-processorpath "$work/clockwatch-wallclock.jar" -Xplugin:WallClock)
				t0=$(date +%s.%N)
				# No -Xlint:none or -nowarn: they hide the plugin's warnings too.
				"$javac" -XDsuppressNotes -Xmaxwarns 100000 "${plugin[@]}" --patch-module "$m=stage/$m" -d "out/$m" \
					$(find "stage/$m" -name '*.java') >"log-$mode-$m.txt" 2>&1
				t1=$(date +%s.%N)
				local_t=$(echo "$local_t + $t1 - $t0" | bc)
			done
			printf 'time\tjdk-javac-%s-plugin\t%.1f s\n' "$mode" "$local_t" >&2
		done
		cat log-with-*.txt | { grep '^stage/.*: warning: \[WallClock' || true; } | sed 's#^stage/##' |
			awk '{ i=index($0, ": warning: [WallClock"); printf "jdk\t%s\t%s\n", substr($0, 1, i-1), substr($0, i+11, 110) }' >>"$out"
	)
fi

sort -t"$(printf '\t')" -k1,1 -k2,2V "$out"
echo
cut -f1 "$out" | sort | uniq -c | awk '{ printf "count\t%s\t%d\n", $2, $1 }'
echo "total	$(wc -l <"$out")"
