# Sourced by the peer's shell tests: writes a test CA (ca.pem) and a server certificate for
# localhost and 127.0.0.1 (server.pem, PKCS#8 server.key) signed by it into the current
# directory, valid for two days.
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -x509 -new -key ca.key -subj /CN=test-ca -days 2 -out ca.pem 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out s.key
openssl pkcs8 -topk8 -nocrypt -in s.key -out server.key
openssl req -new -key server.key -subj /CN=localhost -out s.csr
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >ext
openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext -out server.pem 2>/dev/null
