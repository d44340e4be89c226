#!/usr/bin/env python3
"""libpami.so exports exactly the public API.

check_exports.py LIBRARY HEADER...: every dynamic symbol the library
defines (nm -D --defined-only) must be a function marked PAMI_EXPORT in
one of the installed headers, in version node PAMI_<major>.<minor>;
every such function must be exported; every header must give its
declarations C linkage for C++ (extern "C"). Prints each breach and
exits 1 if there is one.
"""
import re
import subprocess
import sys


def declared(headers):
    """Functions marked PAMI_EXPORT, by header, and headers lacking
    extern "C"."""
    funcs, no_c_linkage = {}, []
    for h in headers:
        text = open(h, encoding='utf-8').read()
        if 'extern "C"' not in text:
            no_c_linkage.append(h)
        # PAMI_EXPORT, then the return type, then name( (any newlines).
        for m in re.finditer(r'^PAMI_EXPORT\s+[^;(]*?\b(pami_\w+)\s*\(',
                             text, re.M):
            funcs[m.group(1)] = h
    return funcs, no_c_linkage


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only',
                          '--with-symbol-versions', lib],
                         check=True, capture_output=True, text=True).stdout
    syms, nodes = {}, set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        base, _, version = name.partition('@')
        if kind == 'A':  # a version node's own symbol
            nodes.add(base)
            continue
        syms[base] = (kind, version.lstrip('@'))
    return syms, nodes


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    lib, headers = sys.argv[1], sys.argv[2:]
    funcs, no_c_linkage = declared(headers)
    syms, nodes = exported(lib)
    bad = []
    for h in no_c_linkage:
        bad.append(f'{h}: no extern "C" block for C++')
    node_re = re.compile(r'^PAMI_\d+\.\d+$')
    for n in sorted(nodes):
        if not node_re.match(n):
            bad.append(f'version node {n} is not PAMI_<major>.<minor>')
    if not nodes:
        bad.append('no version node: the library is linked without pami.map')
    for name, (kind, version) in sorted(syms.items()):
        if name not in funcs:
            bad.append(f'{name} ({kind}) is exported but is no public '
                       f'function (declared with PAMI_EXPORT in a header)')
        elif kind not in ('T', 'W', 'i'):
            bad.append(f'{name} is exported as {kind}, not as a function')
        elif version not in nodes:
            bad.append(f'{name} has version "{version}", not one of '
                       f'{sorted(nodes)}')
    for name, h in sorted(funcs.items()):
        if name not in syms:
            bad.append(f'{name} is declared PAMI_EXPORT in {h} but the '
                       f'library does not export it')
    for b in bad:
        print('FAIL:', b)
    print(f'{len(syms)} exported functions, {len(funcs)} declared, '
          f'nodes {sorted(nodes)}: {"ok" if not bad else "FAILED"}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
