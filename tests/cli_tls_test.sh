#!/usr/bin/env bash
# The client's own HTTPS (src/cli/http.h) against `openssl s_server`: a certificate the system
# does not trust, or one for another name, is refused before anything is sent (exit 1, the
# reason named); one it trusts (SSL_CERT_FILE) for the address in the URL gets through, and the
# server's page, not JSON, is reported as such. Skipped without the openssl command.
# Usage: cli_tls_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: cli_tls_test.sh GPUPOOL_BINARY}
command -v openssl > /dev/null && command -v python3 > /dev/null || { echo "skipped: no openssl or python3"; exit 77; }
source "$(dirname "$0")/lib/cli.sh"
export HOME="$tmp/home"
unset GPUPOOL_CONFIG GPUPOOL_URL
export GPUPOOL_TOKEN=secret

cert() {  # cert NAME SUBJECT_ALT_NAMES: a self-signed EC certificate and key
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=$1" \
    -addext "subjectAltName=$2" -keyout "$tmp/$1.key" -out "$tmp/$1.pem" 2> /dev/null || fail "openssl req"
}
serve_tls() {  # serve_tls NAME: s_server with that certificate on a free port, in $port
  port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  openssl s_server -quiet -www -accept "127.0.0.1:$port" -cert "$tmp/$1.pem" -key "$tmp/$1.key" \
    > "$tmp/s_server.log" 2>&1 &
  tls_server=$!
  for _ in $(seq 1 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2> /dev/null && return
    sleep 0.1
  done
  fail "s_server did not start: $(cat "$tmp/s_server.log")"
}
stop_tls() { kill "$tls_server" 2> /dev/null; wait "$tls_server" 2> /dev/null; }

cert loopback "IP:127.0.0.1,DNS:localhost"
cert elsewhere "DNS:gpupool.example"

serve_tls loopback
gp get jobs --url "https://127.0.0.1:$port"
expect_rc 1 "a certificate nobody trusts"
err_has "cannot reach the gpupool server at https://127.0.0.1:$port: TLS server verification failed: self.signed certificate"
SSL_CERT_FILE="$tmp/loopback.pem" gp get jobs --url "https://127.0.0.1:$port"
expect_rc 1 "a trusted certificate: through TLS, to a page that is not the API"
err_has "the server's reply is not JSON"
# By the name in the certificate, where the machine resolves localhost (a bare chroot has no
# /etc/hosts).
if python3 -c "import socket; socket.gethostbyname('localhost')" 2> /dev/null; then
  SSL_CERT_FILE="$tmp/loopback.pem" gp get jobs --url "https://localhost:$port"
  expect_rc 1 "the name in the certificate"
  err_has "the server's reply is not JSON"
else
  echo "localhost does not resolve here: the check by name is skipped"
fi
stop_tls

serve_tls elsewhere
SSL_CERT_FILE="$tmp/elsewhere.pem" gp get jobs --url "https://127.0.0.1:$port"
expect_rc 1 "a trusted certificate for another name"
err_has "TLS server verification failed: .*(mismatch|IP address)"
stop_tls

# TLS to a port where nothing listens.
gp get jobs --url "https://127.0.0.1:1"
expect_rc 1 "nothing listening"
err_has 'could not connect'
echo "cli tls ok"
