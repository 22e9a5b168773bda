// Internal to src/http: the OpenSSL context behind TlsCredentials (server.h), for the sessions
// of server.cc; made and reloaded in tls.cc.
#pragma once

#include <boost/asio/ssl.hpp>

#include "http/server.h"

namespace gpupool::http {

class TlsCredentials::Context {
 public:
  boost::asio::ssl::context ssl{boost::asio::ssl::context::tls_server};
};

}  // namespace gpupool::http
