// RestConfig: where the API server is and how to authenticate to it, loaded from a kubeconfig
// file (current context; client certificate/key, bearer token or token file; CA) or from the
// in-cluster service account. TLS is always verified unless the kubeconfig says
// insecure-skip-tls-verify. Errors throw ConfigError naming the file and the missing key.
#pragma once

#include <stdexcept>
#include <string>

namespace ppu::op {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RestConfig {
  std::string server;           // https://host:port
  std::string ca_pem;           // CA bundle (PEM); empty = system trust store
  std::string client_cert_pem;  // client certificate (PEM)
  std::string client_key_pem;   // client key (PEM)
  std::string token;            // bearer token
  std::string token_file;       // re-read on use (projected service-account tokens rotate)
  std::string ns = "default";   // context namespace / pod namespace
  bool insecure = false;
};

RestConfig load_kubeconfig(const std::string& path, const std::string& context = "");
RestConfig in_cluster_config();
// --kubeconfig if given, else $KUBECONFIG, else in-cluster if KUBERNETES_SERVICE_HOST is set,
// else ~/.kube/config.
RestConfig resolve_config(const std::string& kubeconfig_flag);

std::string base64_decode(const std::string& in);

}  // namespace ppu::op
