# Thin wrapper: install what is missing, then meson does the work.
BUILD ?= build
MESON_FLAGS ?=

DEB_PACKAGES = gcc pkg-config meson ninja-build libucx-dev ucx-utils \
               libev-dev libpmix-dev openmpi-bin libopenmpi-dev \
               libcmocka-dev libjson-c-dev python3-matplotlib

.PHONY: all deps build demo test clean

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

test: build
	meson test -C $(BUILD) --print-errorlogs --num-processes 2

clean:
	rm -rf $(BUILD)
