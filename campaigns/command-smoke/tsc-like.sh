#!/bin/sh
# Prints what `tsc --extendedDiagnostics` prints (its shape, with made-up figures), after a little
# work, so that campaigns/command-smoke.toml exercises the tsc-extended-diagnostics parser
# without TypeScript installed.
set -eu
i=0
while [ "$i" -lt 20000 ]; do i=$((i + 1)); done
cat <<OUT
Files:                          12
Lines of Library:            39135
Lines of TypeScript:           310
Identifiers:                 94322
Symbols:                     88120
Types:                       31870
Instantiations:             123456
Memory used:                171213K
I/O Read time:               0.00s
Parse time:                  0.31s
Bind time:                   0.12s
Check time:                  2.47s
Emit time:                   0.00s
Total time:                  2.92s
OUT
