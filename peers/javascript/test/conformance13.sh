#!/bin/bash
# The peer with its revision 1.4 declarations hidden (the payload `dated`, `client_modes`, the
# revision), for a 1.3 conformance kit, which refuses them: it then runs every other row.
#   rpcarena conformance --stack orpc-openapi -- peers/javascript/test/conformance13.sh
# Remove once every controller in use knows revision 1.4.
peer="$(dirname "$(readlink -f "$0")")/../bin/rpcarena-peer-javascript"
if [ "$1" = capabilities ]; then
  "$peer" capabilities | sed -e 's/,"dated"\]/]/g' -e 's/"client_modes":\["official","replay"\],//g' -e 's/"revision":"1.4"/"revision":"1.3"/'
  exit "${PIPESTATUS[0]}"
fi
exec "$peer" "$@"
