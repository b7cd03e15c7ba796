#!/usr/bin/env bash
# Fails when the docs still hold a placeholder: a measurement nobody filled in, a TODO, a TBD.
#
#   scripts/check-docs.sh [FILE...]      default: every text file under docs/ and README.md
#
# Prints one line per placeholder, `file:line: token`, and exits 1 if there is any (0 if none,
# 2 if a file cannot be read). Run from anywhere; paths are relative to the repository root.
#
# A placeholder is a token, matched case-sensitively as a whole word:
#   - TODO, TBD, FIXME, XXX, TKTK;
#   - an ALL_CAPS token that starts with MEASURED_, PLACEHOLDER or FILL_IN, or ends with
#     _PLACEHOLDER or _HERE (MEASURED_REPORT_TABLE, CPU_FIGURE_HERE).
# Other ALL_CAPS words are the docs' subject (TCP_INFO, SO_RCVBUF, DEADLINE_EXCEEDED) and pass.
# Prose that is merely false ("not written yet" where it is written) cannot be told from true
# prose by a pattern and is not checked. A line that must name a placeholder token (this kind of
# check documented in the docs) ends with the comment `<!-- check-docs: allow -->`.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

if (($# > 0)); then
    files=("$@")
else
    # Text files only (docs/ also holds images).
    mapfile -t files < <(find docs -type f -exec grep -Il . {} + | sort; echo README.md)
fi

words='TODO|TBD|FIXME|XXX|TKTK'
caps='[A-Z0-9]+(_[A-Z0-9]+)*'
pattern="(^|[^A-Za-z0-9_])(($words)|((MEASURED_|PLACEHOLDER|FILL_IN)($caps)?)|($caps(_PLACEHOLDER|_HERE)))([^A-Za-z0-9_]|$)"

status=0
for file in "${files[@]}"; do
    if [[ ! -r $file ]]; then
        echo "check-docs: cannot read $file" >&2
        exit 2
    fi
    while IFS= read -r hit; do
        line=${hit%%:*}
        text=${hit#*:}
        [[ $text == *'<!-- check-docs: allow -->'* ]] && continue
        token=$(grep -oE "$pattern" <<<"$text" | head -n 1 | tr -cd 'A-Za-z0-9_')
        echo "$file:$line: placeholder $token"
        status=1
    done < <(grep -nE "$pattern" "$file")
done
if ((status != 0)); then
    echo "check-docs: fill in or remove the placeholders above" >&2
fi
exit "$status"
