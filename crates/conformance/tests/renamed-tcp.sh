# The body of a wrapper script around the Rust peer ($PEER): its tcp stack renamed tcp-renamed,
# and any conformance faults it declares withdrawn, so no partner offers that stack with faults
# (the kit's not-checked rows). Used by crates/conformance/tests/broken.rs and
# crates/cli/tests/conformance.rs.
if [ "$1" = capabilities ]; then
  "$PEER" capabilities | sed -e 's/"stack":"tcp"/"stack":"tcp-renamed"/g' \
    -e 's/"conformance_faults":true/"conformance_faults":false/g'
  exit
fi
args=()
for a in "$@"; do
  [ "$a" = tcp-renamed ] && a=tcp
  args+=("$a")
done
exec "$PEER" "${args[@]}"
