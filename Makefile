# Thin wrapper: install what is missing, then meson does the work.
BUILD ?= build
MESON_FLAGS ?=
# libFuzzer targets (docs/fuzzing.md): clang, in a build dir of their own.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 3
FUZZ_TARGETS ?=

DEB_PACKAGES = gcc pkg-config meson ninja-build libucx-dev ucx-utils \
               libev-dev libpmix-dev openmpi-bin libopenmpi-dev \
               libcmocka-dev libjson-c-dev clang libclang-rt-14-dev \
               python3-matplotlib abigail-tools

.PHONY: all deps build demo test fuzz fuzz-build fuzz-smoke soak clean abi-baseline

all: build

deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	else \
	  echo "deps: all Debian packages present"; \
	fi

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_FLAGS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

demo: build
	$(BUILD)/tools/pamirun/pamirun -n 4 --timeout 120 $(BUILD)/examples/demo

# The suites, then each fuzz target briefly; both run even if one fails.
test: build
	@rc=0; \
	meson test -C $(BUILD) --print-errorlogs --num-processes 2 || rc=1; \
	$(MAKE) --no-print-directory fuzz-smoke || rc=1; \
	exit $$rc

# The public ABI baseline the abi-baseline test compares with (docs/abi.md):
# regenerate it in the commit that changes the ABI on purpose. Needs
# debug info (the default debugoptimized build has it).
abi-baseline: build
	abidw --headers-dir $(BUILD)/include/pami --no-show-locs \
	  --no-corpus-path --type-id-style hash \
	  --out-file test/abi/libpami.abi $(BUILD)/libpami.so

$(FUZZ_BUILD)/build.ninja:
	CC=clang meson setup $(FUZZ_BUILD) -Dfuzz=true -Dtests=false \
	  -Db_sanitize=address,undefined -Db_lundef=false

fuzz-build: deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)

# Every target for FUZZ_SECONDS (make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS="am svd").
fuzz: fuzz-build
	test/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	test/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

# The fault suite's whole matrix, SOAK_RUNS runs per cell, and a table of
# detection and shutdown times (docs/faults.md).
SOAK_RUNS ?= 5
soak: build
	SOAK_RUNS=$(SOAK_RUNS) sh test/faults/soak.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
