# kvsite: `make` builds the generator and the bundled site; `make test` runs every test.
# Libraries come from Debian packages, found with pkg-config (see `make deps`).

PKGS      := libcmark-gfm lua5.4 yaml-0.1
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
LDLIBS     = $(shell pkg-config --libs $(PKGS)) -lcmark-gfm-extensions -lm
VERSION   := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
CFLAGS    += -DKVSITE_VERSION='"$(VERSION)"'

LIB_SRC   := $(filter-out gen/main.c,$(wildcard gen/*.c))
LIB_OBJ   := $(LIB_SRC:gen/%.c=$(B)/obj/%.o)
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
KVSITE    := $(B)/kvsite

DEBIAN_PKGS := build-essential pkg-config libcmark-gfm-dev libcmark-gfm-extensions-dev \
               liblua5.4-dev libyaml-dev libcmocka-dev python3 procps

.PHONY: all site kvsite test check-all check-unit check-e2e check-spec check-lua check-site check-lint deps clean bench fuzz memcheck install uninstall

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

$(B)/libkvsite.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(KVSITE): $(B)/obj/main.o $(B)/libkvsite.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libkvsite.a $(wildcard gen/*.h tests/unit/*.h) | $(B)/tests
	$(CC) $(CFLAGS) -Igen $(shell pkg-config --cflags cmocka) -o $@ $< $(B)/libkvsite.a \
	    $(LDFLAGS) $(LDLIBS) $(shell pkg-config --libs cmocka)

$(B)/obj $(B)/tests:
	mkdir -p $@

site: $(KVSITE)
	$(KVSITE) build --strict

# Every test: unit, Lua, end to end and spec, then all of it again under ASan and UBSan.
test:
	$(MAKE) check-all
	$(MAKE) B=build/san SAN=1 OPT="-O1 -g" check-all

check-all: check-unit check-lua check-e2e check-spec check-site check-lint

check-unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

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

# libFuzzer targets (clang), each for FUZZ_SECONDS; saved crashes are replayed first.
FUZZ_SECONDS ?= 30
fuzz:
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

# The bundled site's build under valgrind: no errors, no definite leaks.
memcheck: $(KVSITE)
	KVSITE=$(abspath $(KVSITE)) bash tests/fuzz/memcheck.sh

deps:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBIAN_PKGS)

clean:
	rm -rf build site .kvsite .site.staging* .site.old*
