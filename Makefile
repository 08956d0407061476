# Backlot: make demo (the whole pipeline end to end) and make test.
SWIFT ?= swift
BUILD_DIR := .build
BACKLOT := $(BUILD_DIR)/debug/backlot

.PHONY: all bootstrap build demo demo-cluster test bench clean install install-runtime-deps deb

all: build

bootstrap:
	@scripts/bootstrap

build: bootstrap
	$(SWIFT) build

# Runs the pipeline end to end on generated sample data, in a temporary folder it removes.
demo: build
	@scripts/demo $(BACKLOT)

# Hosting at scale on this machine: PostgreSQL + radosgw + two instances + the nginx edge + a client
# that installs and updates through the edge, all stopped and removed at the end.
demo-cluster: build
	@scripts/demo-cluster $(BACKLOT)

# The module graph against Package.swift and docs/architecture.md, swift format lint, the tests (with the
# explicit import check), schemathesis against a live server, the README's release week in bash and zsh,
# the example app against a server, libbacklot and its C, C++, Python, Rust and C# bindings against a server,
# a downloader extension written in Python, the Debian package installed and removed, what `make install`
# installs run with the Swift toolchain hidden (scripts/install-test), then a short seeded pass of every fuzz
# harness (scripts/fuzz --smoke).
test: bootstrap
	@scripts/module-graph --check
	@$(SWIFT) format lint --strict --recursive --parallel Package.swift Sources Tests Examples
	@SWIFT=$(SWIFT) scripts/test
	@$(SWIFT) build --product backlot >/dev/null && scripts/api-conformance $(BACKLOT)
	@scripts/dashboard-test $(BACKLOT) $(BUILD_DIR)/dashboard-test
	@scripts/release-week $(BACKLOT)
	@SWIFT=$(SWIFT) scripts/example-app $(BACKLOT)
	@SWIFT=$(SWIFT) scripts/capi-test $(BACKLOT)
	@scripts/python-extension-test $(BACKLOT)
	@SWIFT=$(SWIFT) scripts/deb-test
	@SWIFT=$(SWIFT) scripts/install-test
	@$(SWIFT) build --product BacklotCAPI >/dev/null && scripts/peer-cache-test $(BACKLOT)
	@scripts/fuzz --smoke

# Builds the libFuzzer harnesses and runs each for FUZZ_SECONDS; crash inputs go to Fuzz/Findings/.
FUZZ_SECONDS ?= 600
.PHONY: fuzz
fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz

# A release build, installed with the Swift runtime it needs (PREFIX/lib/backlot/swift, its RUNPATH), its
# systemd units and docs under PREFIX (scripts/install --help). It needs the Swift toolchain and the build's
# packages (scripts/bootstrap --build), never the test stack; the installed files run without the toolchain.
# A server that gets the installed files (DESTDIR, a copy) needs only the Debian libraries they link:
# make install-runtime-deps (scripts/bootstrap --runtime). The Debian package is the other way (make deb).
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_FLAGS ?=
install:
	@scripts/bootstrap --build
	$(SWIFT) build -c release --product backlot
	@SWIFT=$(SWIFT) scripts/install --prefix $(PREFIX) --binary $(BUILD_DIR)/release/backlot $(if $(DESTDIR),--destdir $(DESTDIR)) $(INSTALL_FLAGS)

# On the server: only the Debian libraries the installed backlot runs with (no toolchain, no test stack).
install-runtime-deps:
	@scripts/bootstrap --runtime

# The Debian package backlot_VERSION_amd64.deb in .build/deb (release build; docs/packaging.md).
deb: bootstrap
	@SWIFT=$(SWIFT) scripts/deb

# Release build, a generated ~1 GiB corpus, and side-by-side runs against the peers.
bench:
	@scripts/bootstrap --bench
	$(SWIFT) build -c release
	@scripts/bench $(BUILD_DIR)/release/backlot
	@scripts/bench-server $(BUILD_DIR)/release/backlot
	@scripts/bench-client $(BUILD_DIR)/release/backlot
	@scripts/bench-small $(BUILD_DIR)/release/backlot
	@scripts/bench-family $(BUILD_DIR)/release/backlot
	@scripts/bench-processing $(BUILD_DIR)/release/backlot
	@scripts/bench-memory $(BUILD_DIR)/release/backlot
	@scripts/bench-aar $(BUILD_DIR)/release/backlot
	@scripts/bench-idle $(BUILD_DIR)/release/backlot
	@scripts/bench-cluster $(BUILD_DIR)/release/backlot
	@scripts/bench-storm $(BUILD_DIR)/release/backlot
	@scripts/bench-storm $(BUILD_DIR)/release/backlot --devices 2000 --faults all
	@scripts/bench-tls $(BUILD_DIR)/release/backlot
	@scripts/bench-capi $(BUILD_DIR)/release/backlot $(BUILD_DIR)/release/libBacklotCAPI.so
	@scripts/peer-cache-test $(BUILD_DIR)/release/backlot --bench $(BUILD_DIR)/bench-peers.md

clean:
	rm -rf $(BUILD_DIR)
