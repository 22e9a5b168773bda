// TlsCredentials (server.h): the certificate chain and key a TLS listener serves, read from PEM
// files at Load and at each Reload.
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>

#include <boost/asio/ssl.hpp>

#include "http/server.h"
#include "http/tls_context.h"

namespace gpupool::http {

namespace net = boost::asio;

namespace {

Result<std::shared_ptr<TlsCredentials::Context>> ReadCredentials(const std::string& cert_file, const std::string& key_file,
                                                                 const std::string& client_ca_file) {
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
  if (!client_ca_file.empty()) {
    // Asked for, not required: API callers bring tokens. The CA's names go in the request so a
    // client with several certificates offers the right one.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(client_ca_file.c_str());
    if (names == nullptr || SSL_CTX_load_verify_locations(c->ssl.native_handle(), client_ca_file.c_str(), nullptr) != 1) {
      if (names != nullptr) sk_X509_NAME_pop_free(names, X509_NAME_free);
      return InvalidArgument("cannot use the client CA file " + client_ca_file + ": it must hold PEM certificates");
    }
    SSL_CTX_set_client_CA_list(c->ssl.native_handle(), names);
    SSL_CTX_set_verify(c->ssl.native_handle(), SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_verify_depth(c->ssl.native_handle(), 4);
  }
  return c;
}

}  // namespace

std::vector<std::string> ClientCertificateNames(SSL* ssl) {
  std::vector<std::string> out;
  if (SSL_get_verify_result(ssl) != X509_V_OK) return out;
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return out;
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
    if (g->type != GEN_DNS) continue;
    const ASN1_IA5STRING* dns = g->d.dNSName;
    out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)), ASN1_STRING_length(dns));
  }
  if (sans != nullptr) GENERAL_NAMES_free(sans);
  if (out.empty()) {
    const X509_NAME* subject = X509_get_subject_name(cert);
    const int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (at >= 0) {
      const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at));
      unsigned char* utf8 = nullptr;
      const int n = ASN1_STRING_to_UTF8(&utf8, cn);
      if (n > 0) out.emplace_back(reinterpret_cast<const char*>(utf8), n);
      OPENSSL_free(utf8);
    }
  }
  X509_free(cert);
  // A name with a NUL or control character names no node: drop it rather than let it compare.
  std::erase_if(out, [](const std::string& n) {
    return n.empty() || std::any_of(n.begin(), n.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; });
  });
  return out;
}

TlsCredentials::TlsCredentials(std::string cert_file, std::string key_file, std::string client_ca_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)), client_ca_file_(std::move(client_ca_file)) {}
TlsCredentials::~TlsCredentials() = default;

Result<std::shared_ptr<TlsCredentials>> TlsCredentials::Load(std::string cert_file, std::string key_file,
                                                             std::string client_ca_file) {
  std::shared_ptr<TlsCredentials> t(
      new TlsCredentials(std::move(cert_file), std::move(key_file), std::move(client_ca_file)));
  GP_RETURN_IF_ERROR(t->Reload());
  return t;
}

Status TlsCredentials::Reload() {
  Result<std::shared_ptr<Context>> c = ReadCredentials(cert_file_, key_file_, client_ca_file_);
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
