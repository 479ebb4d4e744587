#!/usr/bin/env bash
# rename.sh applies the renames of docs/layout.md ("Names") to the tree in place:
#
#   package retrieve (ranker interfaces, TopK, bm25)   -> rank, rank/bm25
#   package retriever (the served index)               -> toolindex; retriever.Retriever -> toolindex.Index
#   biencoder.Retriever, Embedder.Retriever, colt.Retriever -> biencoder.Ranker, Embedder.Ranker, colt.Ranker
#   feedback.Refiner (what rewrites the query), Refine, Config.Refiner -> feedback.Rewriter, Rewrite, Config.Rewriter
#   -retriever RUN (the stage-1 run)                   -> -first-stage RUN   (cli.Retriever -> cli.FirstStage)
#   train feedback / eval -refiner llm|prf, -refiner-k -> -rewriter, -rewriter-k
#   serve.VersionKey's value                           -> export.IndexVersionKey (the index format is export's)
#
# The old flag spellings keep parsing (internal/cli.Renamed: a one-line deprecation note). Run
# it from anywhere in the repository, on a clean tree (it refuses a dirty one unless FORCE=1):
# every step checks whether it is still to do, so a second run, or a run on a later tree that
# merged other branches, does only what is left. It ends with go build ./... and go vet of the
# packages it touched; a name that collides on a later tree stops gopls with a message naming
# the place (rename it there by hand, then run this again). Needs gopls (GOPLS=path, else
# gopls on PATH, else ~/go/bin/gopls: `go install golang.org/x/tools/gopls@latest`) and perl.
# DRY=1 lists the steps still to do and changes nothing.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.4} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--buildvcs=false}
MOD=github.com/toolret/toolret
DRY=${DRY:-}
GOPLS=${GOPLS:-$(command -v gopls || echo "$HOME/go/bin/gopls")}
if [ -z "$DRY" ]; then
	[ -x "$GOPLS" ] || { echo "rename.sh: no gopls ($GOPLS): go install golang.org/x/tools/gopls@latest" >&2; exit 1; }
	if [ -z "${FORCE:-}" ] && [ -n "$(git status --porcelain --untracked-files=no)" ]; then
		echo "rename.sh: the tree has uncommitted changes: commit them first (or FORCE=1)" >&2
		exit 1
	fi
fi
todo=0
step() { todo=$((todo + 1)); echo "rename.sh: $*"; }

# gofiles lists the Go files of the module (tracked and new), the vendored HNSW copy aside.
gofiles() { git ls-files -co --exclude-standard -- '*.go' | grep -v '^internal/hnsw/' | while read -r f; do [ -f "$f" ] && echo "$f"; done; }
# docfiles lists the markdown and shell files that name packages, flags and types (not
# docs/layout.md, which states the renames: old and new names).
docfiles() { git ls-files -co --exclude-standard -- '*.md' '*.sh' | grep -v -e '^scripts/dev/rename.sh$' -e '^docs/layout.md$' | while read -r f; do [ -f "$f" ] && echo "$f"; done; }
# sub FILES... runs the perl code in $S (substitutions on $_, the whole file) on each file,
# rewriting the files it changes.
sub() {
	local f
	for f in "$@"; do
		if S="$S" perl -0ne 'my $o = $_; eval $ENV{S}; die $@ if $@; exit($_ eq $o ? 1 : 0)' "$f"; then
			[ -n "$DRY" ] || S="$S" perl -0pi -e 'eval $ENV{S}; die $@ if $@' "$f"
			echo "  $f"
		fi
	done
}

# ident FILE REGEX NEW renames, with gopls (every reference, in every package), the identifier
# that REGEX's first group matches in FILE (its first match); nothing when REGEX matches nothing.
ident() {
	local f=$1 re=$2 new=$3 pos
	[ -f "$f" ] || return 0
	pos=$(RE="$re" perl -ne 'if (/$ENV{RE}/) { print "$.:", $-[1] + 1; exit }' "$f")
	[ -n "$pos" ] || return 0
	step "$f:$pos: rename $(sed -n "${pos%%:*}p" "$f" | cut -c"${pos#*:}"- | grep -o '^[A-Za-z_0-9]*') -> $new"
	[ -n "$DRY" ] || "$GOPLS" rename -w "$f:$pos" "$new"
}

# movepkg OLD NEW moves the package directory OLD (and its subpackages) to NEW: the package
# clauses, every import path, every OLD.Name qualifier in the files importing it, and the
# OLD.Name / `OLD/...` references of comments and docs.
movepkg() {
	local old=$1 new=$2 f
	if [ -d "$old" ] && [ ! -d "$new" ]; then
		step "git mv $old $new"
		[ -n "$DRY" ] || git mv "$old" "$new"
	fi
	[ -d "$new" ] || [ -n "$DRY" ] || { echo "rename.sh: neither $old nor $new exists" >&2; exit 1; }
	[ -n "$DRY" ] && [ -d "$old" ] && new=$old # the files are still at the old place
	S="s/^package ${old##*/}(_test)?\$/package ${2##*/}\$1/mg; s/^\/\/ Package ${old##*/}\b/\/\/ Package ${2##*/}/m"
	sub $(find "$new" -maxdepth 1 -name '*.go')
	S="s{\"\\Q$MOD/$old\\E([/\"])}{\"$MOD/$2\$1}g"
	sub $(gofiles)
	# Qualified references: in code only in the files importing the package (without an
	# alias), in comments, docs and messages wherever they name an exported identifier.
	S="s/(?<![\\w\"\\/-])(?<![\\w)\\]]\\.)\\Q${old##*/}\\E\\.(?=[A-Z])/${2##*/}./g"
	sub $(gofiles) $(docfiles)
	S="s{\`\\Q$old\\E(/[\\w/]*)?\`}{\`$2\$1\`}g"
	sub $(gofiles) $(docfiles)
}

# Names that would collide with the new package names (a parameter or function called rank
# in a file that uses package rank).
ident evaluate/rounds.go '^func Replay\(.*\b(rank) RankFunc' rankFn
ident evaluate/rounds.go '^func Live\(.*\b(rank) RankFunc' rankFn
ident models/biencoder/kind.go '^func (rank)\(' rankRun
while ident evaluate/rounds_test.go '^\t(rank) :?= ' rankFn && [ -z "$DRY" ] && grep -qP '^\trank :?= ' evaluate/rounds_test.go; do :; done

echo "rename.sh: packages"
movepkg retrieve rank
movepkg retriever toolindex
# Each package's main file after its name.
for m in toolindex/retriever:toolindex/index toolindex/retriever_test:toolindex/index_test rank/retrieve:rank/rank rank/retrieve_test:rank/rank_test; do
	if [ -f ${m%%:*}.go ] && [ ! -f ${m#*:}.go ]; then
		step "git mv ${m%%:*}.go ${m#*:}.go"
		[ -n "$DRY" ] || git mv ${m%%:*}.go ${m#*:}.go
	fi
done
D=toolindex; [ -d $D ] || D=retriever
I=$D/index.go; [ -f $I ] || I=$D/retriever.go

echo "rename.sh: types"
ident $I '^type (Retriever) struct' Index
ident models/biencoder/embed.go '^type (Retriever) struct' Ranker
ident models/biencoder/embed.go '^func \(\w+ \*Embedder\) (Retriever)\(' Ranker
ident models/colt/task.go '^type (Retriever) struct' Ranker
ident feedback/feedback.go '^type (Refiner) interface' Rewriter
ident feedback/feedback.go '^\t(Refine)\(ctx context.Context' Rewrite
ident feedback/run.go '^\t(Refiner)\s+Rewriter\b' Rewriter
ident internal/cli/cli.go '^func (Retriever)\(fs \*flag.FlagSet\)' FirstStage

# The types as comments and docs name them (gopls renames the code).
S='s/\b(toolindex|retriever)\.Retriever\b/toolindex.Index/g; s/\b(biencoder|colt)\.Retriever\b/$1.Ranker/g; s/\bfeedback\.Refiner\b/feedback.Rewriter/g; s/\bEmbedder\.Retriever\b/Embedder.Ranker/g; s/\bcli\.Retriever\b/cli.FirstStage/g'
sub $(gofiles) $(docfiles)

# The served index's type in the comments of its package and of serve.
S='1 while s{^(\s*//.*?)\ba Retriever\b}{$1an Index}m; 1 while s{^(\s*//.*?)(?<![\w.])Retriever\b}{$1Index}m'
sub $(ls $D/*.go serve/*.go 2>/dev/null || true)

echo "rename.sh: flags"
# -retriever RUN -> -first-stage RUN: the definitions, then every mention (messages, docs).
S='s/(fs\.\w+\((?:&[\w.]+, )?)"retriever",/$1"first-stage",/g'
sub $(gofiles | grep -E '^(cmd|commands|internal/cli)/')
S='s/Lookup\("retriever"\)/Lookup("first-stage")/g; s/Set\(fs\)\["retriever"\]/Set(fs)["first-stage"]/g'
sub $(gofiles | grep -E '^(cmd|commands|internal/cli)/' | grep -v _test.go)
S='s/(?<![\w-])-retriever(?![\w-])/-first-stage/g'
sub $(gofiles | grep -v '^internal/cli/renamed') $(docfiles)
# The flag maps of the command tests ({"retriever": RUN} is -retriever RUN) and the flags a
# run recorded (Args).
S='1 while s/(map\[string\]string\{[^\n]*?)"retriever": /$1"first-stage": /; s/Args\["retriever"\]/Args["first-stage"]/g'
sub $(gofiles | grep -E '^(cmd|commands)/.*_test.go$')
# -refiner llm|prf (train feedback, eval: the query rewriter) -> -rewriter; export's and bench
# retrieve's -refiner RUN (the ToolRefiner model) stay.
RW=$(ls commands/train/feedback*.go commands/train/prf.go commands/eval/feedback*.go commands/eval/main.go docs/llm-feedback.md experiments/2026-11-24-llm-feedback/*.sh 2>/dev/null || true)
S='s/(fs\.\w+\((?:&[\w.]+, )?)"refiner(-k)?",/$1"rewriter$2",/g; s/(?<![\w-])-refiner(-k)?(?![\w-])/-rewriter$1/g; s/tools shown to the refiner/tools shown to the rewriter/g'
sub $RW
# (Settings maps are what a collection records: their "refiner" key stays.)
S='1 while s/^((?:(?!Settings)[^\n])*map\[string\]string\{[^\n]*?)"refiner(-k)?": /$1"rewriter$2": /m'
sub $(ls commands/train/feedback*_test.go commands/eval/feedback*_test.go 2>/dev/null || true)
# Docs lines of other pages that run the rewriter.
S='s/^(.*(?:train feedback|eval .*-prf-model).*?)(?<![\w-])-refiner (llm|prf)/$1-rewriter $2/mg'
sub $(docfiles)

echo "rename.sh: the index format"
if ! grep -q IndexVersionKey export/index.go; then
	step "export.IndexVersionKey"
	S='s/(\n\tEmbeddingsName\s*=\s*"embeddings"\n)/$1\t\/\/ IndexVersionKey is the tools.safetensors metadata key of the library version an index\n\t\/\/ updated in place (serve) was last compacted at; absent in an index as exported.\n\tIndexVersionKey = "toolret_library_version"\n/'
	sub export/index.go
fi
S='s/VersionKey = "toolret_library_version"/VersionKey = export.IndexVersionKey/'
sub $(ls serve/store.go toolindex/store/store.go 2>/dev/null)
S='s/const libraryVersionKey = "toolret_library_version"/const libraryVersionKey = export.IndexVersionKey/; s/libraryVersionKey is serve.VersionKey \(serve imports this package\)/libraryVersionKey is export.IndexVersionKey/'
sub $D/refiner.go

if [ -n "$DRY" ]; then
	echo "rename.sh: dry run: $todo renaming steps to do"
	exit 0
fi
echo "rename.sh: gofmt, build, vet"
gofmt -w $(git status --porcelain | awk '{print $NF}' | grep '\.go$' | while read -r f; do [ -f "$f" ] && echo "$f"; done) 2>/dev/null || true
go build ./...
pkgs=$(git status --porcelain | awk '{print $NF}' | grep '\.go$' | xargs -r -n1 dirname | sort -u | sed 's|^|./|')
[ -z "$pkgs" ] || go vet $pkgs
echo "rename.sh: done ($todo renaming steps); git status lists the changes"
