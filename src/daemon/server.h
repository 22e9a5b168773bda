// gpupool serve: one event-loop thread owns the ControlPlane (daemon/loop.h); the event-driven
// HTTP front end (http/server.h, Boost.Beast) hands it work and sends each reply once its batch
// is durable (daemon/http_api.h).
#pragma once

#include <string>

#include "auth/browser_sessions.h"
#include "auth/oidc.h"
#include "core/result.h"
#include "daemon/snapshots.h"
#include "http/server.h"

namespace gpupool {

struct ServeOptions {
  std::string config_path;        // YAML (daemon/config.h); empty: none
  std::string data_dir;           // default "gpupool-data"
  // Where the journal is (store/store_url.h): "" or sqlite:[DIR] (SQLite files), or a
  // postgresql:// URI; --store wins over the configuration's store:.
  std::string store;
  std::string listen;             // HOST:PORT, default 127.0.0.1:8080; port 0: any free port
  // Replicas of a shared store (docs/design/daemon.md, "Replicas"): the URL the other replicas
  // send clients' writes to (default http://LISTEN), and the leader's lease.
  std::string advertise_url;
  int64_t lease_ms = 3000;
  // HTTPS on every listener with this certificate chain and key (PEM; reloaded on SIGHUP); the
  // configuration's tls: otherwise. Without TLS the daemon listens only on loopback addresses
  // unless insecure_listen.
  std::string tls_cert, tls_key;
  // Client certificates this CA signed authenticate node agents (--tls-client-ca, or tls:
  // client_ca_file): the certificate names the node (Principal of CertificatePrincipal).
  std::string tls_client_ca;
  bool insecure_listen = false;
  // /metrics answers only a cluster admin's or a metrics-reader's token (or metrics:
  // {require_token: true} in the configuration).
  bool metrics_require_token = false;
  // The longest an API token may live (POST /v1/tokens' expires_in_days; 90 by default).
  int64_t max_token_days = 365;
  // How OIDC discovery and key sets are fetched over HTTPS (the configuration's auth: oidc:);
  // serve_cmd.cc gives the CLI's HTTP client. Unset: only issuers with a jwks_file work.
  OidcAuthenticator::Fetch oidc_fetch;
  // How the console's sign-in talks to the provider (the authorization URL, the code and
  // refresh grants); serve_cmd.cc gives the CLI's. Unset: the console takes API tokens only.
  OidcCodeFlow console_flow;
  bool demo = false;              // embedded demo cluster, tenant tokens, simulated executor
  bool demo_traffic = true;       // with demo: submit a demo job every few seconds
  // Admitted jobs start at once and end after their estimate (implied by demo). Without it,
  // jobs stay admitted until an agent (issue 6) reports on them.
  bool simulate_executor = false;
  // Cut a damaged journal back to its last intact record (logging how many records that drops)
  // before starting, instead of refusing to start (store/journal.h, RecoverSqliteJournal).
  bool recover = false;
  // The node agents' own listener (HOST:PORT; port 0: any free port, written to DATA/agent-port):
  // /healthz and /v1/agents/... only, with its own connections and thread. Empty: none, the
  // agents share the API listener (which serves their routes either way).
  std::string agent_listen;
  int http_threads = 2;              // the API listener's I/O threads (http/server.h)
  // Failed authentications one source address may make in 10 s before it gets 429 until the 10 s
  // are over (http_api.h); 0: no limit (a source that many users share, behind a NAT).
  int max_auth_failures = 20;
  http::Limits http_limits;          // both listeners' limits (the agents' allow 64 per source)
  int heartbeat_interval_ms = 1000;  // what node agents are told to keep
  int heartbeat_timeout_ms = 10000;  // a node silent this long is unreachable, its jobs requeued
  SnapshotPolicy snapshots;          // when the state is snapshot (daemon/snapshots.h)
  int64_t retention_s = 3600;        // finished jobs leave memory this long after (control_plane.h)
  int64_t max_finished_jobs = 20000;  // and at most this many stay in memory
  // The history file is read whole (every page, every row's checksum) on a thread of its own a
  // second after the start and then this often; 0: never (store/journal.h, ScrubHistoryFile).
  int64_t history_scrub_s = 86400;
};

// Runs until SIGINT or SIGTERM. Returns an error if start-up fails.
Status Serve(const ServeOptions& options);

}  // namespace gpupool
