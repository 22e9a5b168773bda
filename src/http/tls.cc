// TlsCredentials (server.h): the certificate chain and key a TLS listener serves, read from PEM
// files at Load and at each Reload.
#include <openssl/ssl.h>

#include <boost/asio/ssl.hpp>

#include "http/server.h"
#include "http/tls_context.h"

namespace gpupool::http {

namespace net = boost::asio;

namespace {

Result<std::shared_ptr<TlsCredentials::Context>> ReadCredentials(const std::string& cert_file, const std::string& key_file) {
  auto c = std::make_shared<TlsCredentials::Context>();
  try {
    c->ssl.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                       net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1 |
                       net::ssl::context::single_dh_use);
    c->ssl.use_certificate_chain_file(cert_file);
    c->ssl.use_private_key_file(key_file, net::ssl::context::pem);
  } catch (const boost::system::system_error& e) {
    return InvalidArgument("cannot use the TLS certificate " + cert_file + " and key " + key_file + ": " + e.what());
  }
  if (SSL_CTX_check_private_key(c->ssl.native_handle()) != 1) {
    return InvalidArgument("the TLS key " + key_file + " does not belong to the certificate " + cert_file);
  }
  return c;
}

}  // namespace

TlsCredentials::TlsCredentials(std::string cert_file, std::string key_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}
TlsCredentials::~TlsCredentials() = default;

Result<std::shared_ptr<TlsCredentials>> TlsCredentials::Load(std::string cert_file, std::string key_file) {
  std::shared_ptr<TlsCredentials> t(new TlsCredentials(std::move(cert_file), std::move(key_file)));
  GP_RETURN_IF_ERROR(t->Reload());
  return t;
}

Status TlsCredentials::Reload() {
  Result<std::shared_ptr<Context>> c = ReadCredentials(cert_file_, key_file_);
  if (!c.ok()) return c.error();
  std::lock_guard<std::mutex> lock(mu_);
  context_ = std::move(*c);
  return Ok();
}

std::shared_ptr<TlsCredentials::Context> TlsCredentials::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return context_;
}

}  // namespace gpupool::http
