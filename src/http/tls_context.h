// Internal to src/http: the OpenSSL context behind TlsCredentials (server.h), for the sessions
// of server.cc; made and reloaded in tls.cc.
#pragma once

#include <boost/asio/ssl.hpp>

#include <string>
#include <vector>

#include "http/server.h"

namespace gpupool::http {

class TlsCredentials::Context {
 public:
  boost::asio::ssl::context ssl{boost::asio::ssl::context::tls_server};
};

// A verified client certificate's names (Request::client_names) on an established connection.
std::vector<std::string> ClientCertificateNames(SSL* ssl);

}  // namespace gpupool::http
