# kvsite: `make` builds the generator and the bundled site; `make test` runs every test.
# Libraries come from Debian packages, found with pkg-config (see `make deps`).

# `make` alone is `make all` (the grammar rules below would be the first target).
.DEFAULT_GOAL := all

PKGS      := libcmark-gfm lua5.4 yaml-0.1 libmicrohttpd tree-sitter nettle
B         ?= build
CC        ?= cc
OPT       ?= -O2 -g
SAN       ?=
comma     := ,
SANFLAGS  := $(if $(SAN),-fsanitize=address$(comma)undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
# Recursive (=) on purpose: pkg-config must run when a rule needs the flags, after
# `make deps` in the same `make deps all` has installed the packages, not when the
# Makefile is read.
CFLAGS     = -std=c11 -D_GNU_SOURCE -pthread $(OPT) -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
             $(SANFLAGS) $(shell pkg-config --cflags $(PKGS))
LDFLAGS   := -pthread $(SANFLAGS)
# The allocator: tcmalloc (Debian's libtcmalloc-minimal4, linked by its file
# name: the package has no -dev part for the minimal library). A build makes
# hundreds of thousands of small blocks (cmark's, tree-sitter's, buffers), and
# it takes a tenth less CPU than glibc's malloc. Sanitizer builds keep the
# sanitizer's; ALLOC= builds with glibc's.
ALLOC     ?= $(if $(SAN),,-l:libtcmalloc_minimal.so.4)
# libmicrohttpd is not linked: kvsite serve opens it (gen/httpd.c), by the
# file name its -dev package's link leads to, so that the other commands do
# not load it and GnuTLS at every start.
LINK_PKGS := $(filter-out libmicrohttpd,$(PKGS))
LDLIBS     = $(shell pkg-config --libs $(LINK_PKGS)) -lcmark-gfm-extensions -lm $(ALLOC)
MHD_SONAME = $(shell objdump -p "$$(pkg-config --variable=libdir libmicrohttpd)/libmicrohttpd.so" \
                 2>/dev/null | awk '$$1 == "SONAME" { print $$2 }')
VERSION   := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
CFLAGS    += -DKVSITE_VERSION='"$(VERSION)"'
$(B)/obj/httpd.o: CFLAGS += $(if $(MHD_SONAME),-DKV_MHD_SONAME='"$(MHD_SONAME)"')

LIB_SRC   := $(filter-out gen/main.c,$(wildcard gen/*.c))
LIB_OBJ   := $(LIB_SRC:gen/%.c=$(B)/obj/%.o)
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
KVSITE    := $(B)/kvsite

# Code highlighting (gen/highlight.c): the tree-sitter grammars of tools/npm
# (`make deps` runs `npm ci` there), their C parsers compiled into kvsite
# without our warnings (not our code) and their highlights.scm embedded.
NPM_DIR   := tools/npm
TS_MOD    := $(NPM_DIR)/node_modules
# name:folder of its src/:whether it has a scanner.c
TS_LANGS  := lua:@tree-sitter-grammars/tree-sitter-lua:1 c:tree-sitter-c:0 \
             bash:tree-sitter-bash:1 yaml:@tree-sitter-grammars/tree-sitter-yaml:1 \
             json:tree-sitter-json:0 python:tree-sitter-python:1 \
             markdown:@tree-sitter-grammars/tree-sitter-markdown/tree-sitter-markdown:1
TS_CFLAGS := -std=gnu11 -O2 -w
ts_name    = $(word 1,$(subst :, ,$(1)))
ts_src     = $(TS_MOD)/$(word 2,$(subst :, ,$(1)))/src
TS_OBJ    := $(foreach l,$(TS_LANGS),$(B)/ts/$(call ts_name,$(l))_parser.o \
               $(if $(filter 1,$(word 3,$(subst :, ,$(l)))),$(B)/ts/$(call ts_name,$(l))_scanner.o))
define TS_RULE
$(B)/ts/$(call ts_name,$(1))_%.o: $(call ts_src,$(1))/%.c | $(B)/ts
	$$(CC) $(TS_CFLAGS) -I$(call ts_src,$(1)) -c $$< -o $$@
endef
$(foreach l,$(TS_LANGS),$(eval $(call TS_RULE,$(l))))
# The grammars' sources come from `npm ci`; in one `make deps all` they appear while
# make runs, so make would take them for intermediate files and delete them after use.
TS_SRC    := $(foreach l,$(TS_LANGS),$(call ts_src,$(l))/parser.c \
               $(if $(filter 1,$(word 3,$(subst :, ,$(l)))),$(call ts_src,$(l))/scanner.c))
.SECONDARY: $(TS_SRC)
TS_QUERIES := $(foreach l,$(TS_LANGS),$(call ts_name,$(l))=$(call ts_src,$(l))/../queries/highlights.scm)
$(B)/ts/queries.c: tools/embed_queries.py $(foreach q,$(TS_QUERIES),$(word 2,$(subst =, ,$(q)))) | $(B)/ts
	python3 tools/embed_queries.py $@ $(TS_QUERIES)
$(B)/ts/queries.o: $(B)/ts/queries.c
	$(CC) $(TS_CFLAGS) -c $< -o $@
# the grammars alone, for builds outside this Makefile (tests/fuzz/run.sh)
grammars: $(TS_OBJ) $(B)/ts/queries.o
$(TS_MOD)/%:
	@echo "kvsite: $@ is missing: run \`make deps\` (npm ci in $(NPM_DIR))" >&2; exit 1

# What building kvsite needs (`make deps-build`: the starters' CI workflow
# runs it), then what the tests need as well (`make deps`)
DEBIAN_BUILD_PKGS := build-essential pkg-config libcmark-gfm-dev libcmark-gfm-extensions-dev \
               liblua5.4-dev libyaml-dev libmicrohttpd-dev libtree-sitter-dev nodejs \
               libtcmalloc-minimal4 nettle-dev
DEBIAN_PKGS := $(DEBIAN_BUILD_PKGS) libcmocka-dev python3 procps curl valgrind
# make check-html: the Nu HTML checker runs on Java, axe-core in Chromium driven from node;
# the npm packages are pinned in tools/npm (package.json and package-lock.json)
DEBIAN_PKGS += default-jre-headless chromium

.PHONY: print-link-pkgs check-html all site kvsite grammars test check-all check-unit check-fuzz check-e2e check-spec check-lua check-site check-lint deps deps-build clean bench fuzz memcheck install uninstall

# `make install` (PREFIX, DESTDIR as usual): the binary, and beside it under
# share/kvsite/ the default theme, the checks library (its modules, not the bundled
# site's measurements) and the starter sites of `kvsite new`. The binary finds
# them from its own location (gen/paths.c).
PREFIX    ?= /usr/local
BINDIR     = $(DESTDIR)$(PREFIX)/bin
SHAREDIR   = $(DESTDIR)$(PREFIX)/share/kvsite

all: site

kvsite: $(KVSITE)

$(B)/obj/%.o: gen/%.c $(wildcard gen/*.h) | $(B)/obj
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/libkvsite.a: $(LIB_OBJ) $(TS_OBJ) $(B)/ts/queries.o
	rm -f $@ && ar rcs $@ $^

$(KVSITE): $(B)/obj/main.o $(B)/libkvsite.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libkvsite.a $(wildcard gen/*.h tests/unit/*.h) | $(B)/tests
	$(CC) $(CFLAGS) -Igen $(shell pkg-config --cflags cmocka) -o $@ $< $(B)/libkvsite.a \
	    $(LDFLAGS) $(LDLIBS) $(shell pkg-config --libs cmocka)

# The fuzz targets (tests/fuzz/fuzz_*.c), each linked with tests/fuzz/replay.c
# instead of libFuzzer: check-fuzz replays their saved crashes and seeds.
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY  := $(FUZZ_TARGETS:%=$(B)/fuzz-replay/%)

$(B)/fuzz-replay/%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(B)/libkvsite.a $(wildcard gen/*.h) \
	    | $(B)/fuzz-replay
	$(CC) $(CFLAGS) -Igen -o $@ $< tests/fuzz/replay.c $(B)/libkvsite.a $(LDFLAGS) $(LDLIBS)

$(B)/obj $(B)/tests $(B)/ts $(B)/fuzz-replay:
	mkdir -p $@

site: $(KVSITE)
	$(KVSITE) build --strict

# Every test: unit, Lua, end to end and spec, then all of it again under ASan and UBSan,
# then the bundled site's HTML and accessibility (once: it does not depend on the build flags),
# then the bundled site and a failing build under valgrind (memcheck, below).
test:
	$(MAKE) check-all
	$(MAKE) B=build/san SAN=1 OPT="-O1 -g" check-all
	$(MAKE) check-html
	$(MAKE) memcheck

# Every page of the bundled site, built afresh, through the Nu HTML checker (0 errors,
# 0 warnings) and axe-core in headless Chromium at 1280 and 390 px, light and dark
# (0 serious or critical violations): tools/check-html.sh. Needs `make deps`.
check-html: $(KVSITE)
	rm -rf $(B)/html-site
	$(KVSITE) build --strict --no-cache -o $(abspath $(B))/html-site
	bash tools/check-html.sh $(B)/html-site

check-all: check-unit check-fuzz check-lua check-e2e check-spec check-site check-lint

check-unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# Every fuzz target compiles, and its saved crashes and seeds run clean (the
# fuzzing itself, with clang and libFuzzer, is `make fuzz`).
check-fuzz: $(FUZZ_REPLAY)
	@set -e; $(foreach t,$(FUZZ_TARGETS),$(B)/fuzz-replay/$(t) \
	    $(wildcard tests/fuzz/regressions/$(t) tests/fuzz/seeds/$(t));)

check-lua: $(KVSITE)
	@if ls tests/lua/test_*.lua >/dev/null 2>&1; then $(KVSITE) lua-test tests/lua/test_*.lua; fi

# The bundled site: every figure verified, no warnings.
check-site: $(KVSITE)
	$(KVSITE) check --strict

# One term per concept: checks/glossary.yaml's retired variants, nowhere in content/ or templates/.
check-lint:
	bash tests/lint/run.sh

check-e2e: $(KVSITE)
	KVSITE=$(abspath $(KVSITE)) bash tests/e2e/run.sh
	KVSITE=$(abspath $(KVSITE)) bash tests/e2e/hostile.sh
	KVSITE=$(abspath $(KVSITE)) bash tests/e2e/firsthour.sh
	KVSITE=$(abspath $(KVSITE)) bash tests/e2e/serve.sh

install: $(KVSITE)
	install -d $(BINDIR) $(SHAREDIR)/checks
	install -m 755 $(KVSITE) $(BINDIR)/kvsite
	install -m 644 checks/*.lua checks/README.md $(SHAREDIR)/checks/
	@set -e; for d in theme starter; do \
	    (cd share/$$d && find . -type f) | while read -r f; do \
	        install -D -m 644 "share/$$d/$$f" "$(SHAREDIR)/$$d/$$f" || exit 1; \
	    done; \
	done; echo "installed $(BINDIR)/kvsite and $(SHAREDIR)"

uninstall:
	rm -f $(BINDIR)/kvsite
	rm -rf $(SHAREDIR)

check-spec: $(KVSITE)
	KVSITE=$(abspath $(KVSITE)) BUILD_DIR=$(abspath $(B)) bash tests/spec/run.sh

bench: $(KVSITE)
	KVSITE=$(abspath $(KVSITE)) bash tests/bench/run.sh

# Reproduce checks/measurements/llamacpp-*.log with a real llama.cpp (pinned npm packages,
# synthetic models; tests/measure/README.md). Needs network once; not part of `make test`.
.PHONY: measure
measure:
	bash tests/measure/measure.sh

# libFuzzer targets (clang), each for FUZZ_SECONDS; saved crashes are replayed first.
FUZZ_SECONDS ?= 30
fuzz:
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

# The libraries a program made of gen/ links (tests/fuzz/run.sh builds with them).
print-link-pkgs:
	@echo $(LINK_PKGS)

# The bundled site's build under valgrind: no errors, no definite leaks.
memcheck: $(KVSITE)
	KVSITE=$(abspath $(KVSITE)) bash tests/fuzz/memcheck.sh

deps: INSTALL_PKGS := $(DEBIAN_PKGS)
deps-build: INSTALL_PKGS := $(DEBIAN_BUILD_PKGS)
deps deps-build:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(INSTALL_PKGS)
	@# Debian's npm is a package of its own; a nodejs from elsewhere brings its own npm
	command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm
	cd $(NPM_DIR) && npm ci --ignore-scripts --no-audit --no-fund

clean:
	rm -rf build site .kvsite .site.staging* .site.old*
