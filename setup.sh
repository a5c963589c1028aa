#!/usr/bin/env bash
# netrig set-up: install what is missing (Debian packages, a virtualenv), then
#   ./setup.sh demo    build a demo lab and trace it, then run a small seed-000 experiment (default)
#   ./setup.sh test    lint, check types and run the test suite (what CI runs)
#   ./setup.sh bench   run every benchmark in benchmarks/ and print its figures
# Must run as root (netrig creates network namespaces).
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES=(iproute2 iputils-ping iperf3 fping ministat nftables iptables ipset
              batmand babeld bird2 clang llvm libbpf-dev libc6-dev xdp-tools tcpdump ethtool chromium
              openvswitch-switch openvswitch-testcontroller netsniff-ng gcc
              pen haproxy nginx wrk apache2-utils
              graphviz frr)
VENV=.venv

need_root() {
    if [ "$(id -u)" != 0 ]; then echo "setup.sh: run as root (netrig creates network namespaces)" >&2; exit 2; fi
}

ensure_apt() {
    local missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing Debian packages: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

ensure_venv() {
    local stamp="$VENV/.netrig-installed"
    if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then return; fi
    # Debian's own Python, not one under /root: commands that need no root (validate, plan,
    # stat, report …) must run as any user from this virtualenv
    local python=/usr/bin/python3
    [ -x "$python" ] || python=python3
    if ! "$python" -m venv "$VENV" 2>/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        "$python" -m venv "$VENV"
    fi
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q -e '.[test]'
    touch "$stamp"
}

main() {
    local job="${1:-demo}"
    case "$job" in  # before anything is installed
        demo|test|bench) ;;
        *) echo "usage: $0 [demo|test|bench]" >&2; exit 2 ;;
    esac
    need_root
    ensure_apt
    ensure_venv
    # netrig's own bytecode, written here: under PYTHONDONTWRITEBYTECODE=1 (CI, some shells)
    # Python would compile every netrig module a command imports at every start (~30 ms of
    # `netrig validate`). Only changed files are compiled again, and Python does not use a
    # .pyc whose source has changed since. The virtualenv's packages were compiled by pip.
    "$VENV/bin/python" -m compileall -q netrig >/dev/null
    export PATH="$PWD/$VENV/bin:$PATH"
    case "$job" in
        demo)
            netrig doctor || true
            echo; echo "\$ netrig up examples/ring16.yaml"
            netrig up examples/ring16.yaml
            echo; echo "\$ netrig trace ring16 n1 n9 --count 64   # two equal 8-hop paths"
            netrig trace ring16 n1 n9 --count 64 || true
            netrig down ring16
            echo; echo "\$ netrig run examples/seed000-static.yaml --set duration=2 --repeat 2"
            netrig run examples/seed000-static.yaml --set duration=2 --repeat 2 --db netrig.db
            echo; echo "results are in netrig.db: try 'netrig results list --db netrig.db'"
            ;;
        test)
            ruff check netrig tests benchmarks
            lint-imports --no-cache   # the layers of pyproject.toml: no import climbs a layer
            mypy                      # the type hints ([tool.mypy] in pyproject.toml)
            set +e
            python -m pytest -q -rs -p no:cacheprovider "${@:2}"
            rc=$?
            set -e
            if [ "$rc" = 5 ]; then echo "setup.sh: pytest collected no tests: that is a failure" >&2; exit 1; fi
            exit "$rc"
            ;;
        bench)
            for bench in benchmarks/*.py; do echo "== $bench"; python "$bench" "${@:2}"; done
            ;;
        *)
            echo "usage: $0 [demo|test|bench]" >&2; exit 2
            ;;
    esac
}

main "$@"
