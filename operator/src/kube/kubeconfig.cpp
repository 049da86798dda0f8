#include "kube/kubeconfig.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ppu::op {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ConfigError("cannot read '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string resolve(const std::string& base_dir, const std::string& p) {
  return (!p.empty() && p[0] == '/') ? p : base_dir + "/" + p;
}

YAML::Node find_named(const YAML::Node& list, const std::string& name, const std::string& what,
                      const std::string& file) {
  for (const auto& e : list)
    if (e["name"] && e["name"].as<std::string>() == name) return e[what];
  throw ConfigError(file + ": no " + what + " named '" + name + "'");
}

// *-data holds base64 PEM; the plain key holds a path relative to the kubeconfig.
std::string data_or_file(const YAML::Node& n, const std::string& key, const std::string& dir) {
  if (n[key + "-data"]) return base64_decode(n[key + "-data"].as<std::string>());
  if (n[key]) return read_file(resolve(dir, n[key].as<std::string>()));
  return "";
}

}  // namespace

std::string base64_decode(const std::string& in) {
  std::string clean;
  for (char c : in)
    if (!std::isspace(static_cast<unsigned char>(c))) clean.push_back(c);
  if (clean.empty()) return "";
  if (clean.size() % 4 != 0) throw ConfigError("invalid base64 data (length " + std::to_string(clean.size()) + ")");
  std::string out(clean.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (n < 0) throw ConfigError("invalid base64 data");
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t pad = 0;
  if (clean.back() == '=') ++pad;
  if (clean.size() > 1 && clean[clean.size() - 2] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

RestConfig load_kubeconfig(const std::string& path, const std::string& context_name) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    throw ConfigError("--kubeconfig '" + path + "': " + e.what());
  }
  const std::string dir = dir_of(path);
  std::string ctx_name = context_name;
  if (ctx_name.empty()) {
    if (!root["current-context"]) throw ConfigError(path + ": no current-context");
    ctx_name = root["current-context"].as<std::string>();
  }
  YAML::Node ctx = find_named(root["contexts"], ctx_name, "context", path);
  RestConfig rc;
  if (ctx["namespace"]) rc.ns = ctx["namespace"].as<std::string>();
  YAML::Node cluster = find_named(root["clusters"], ctx["cluster"].as<std::string>(), "cluster", path);
  if (!cluster["server"]) throw ConfigError(path + ": cluster has no server");
  rc.server = cluster["server"].as<std::string>();
  while (!rc.server.empty() && rc.server.back() == '/') rc.server.pop_back();
  rc.ca_pem = data_or_file(cluster, "certificate-authority", dir);
  if (cluster["insecure-skip-tls-verify"]) rc.insecure = cluster["insecure-skip-tls-verify"].as<bool>();
  if (ctx["user"]) {
    YAML::Node user = find_named(root["users"], ctx["user"].as<std::string>(), "user", path);
    rc.client_cert_pem = data_or_file(user, "client-certificate", dir);
    rc.client_key_pem = data_or_file(user, "client-key", dir);
    if (user["token"]) rc.token = user["token"].as<std::string>();
    if (user["tokenFile"]) rc.token_file = resolve(dir, user["tokenFile"].as<std::string>());
  }
  return rc;
}

RestConfig in_cluster_config() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port) throw ConfigError("not running in a cluster (KUBERNETES_SERVICE_HOST unset); pass --kubeconfig");
  const std::string sa = "/var/run/secrets/kubernetes.io/serviceaccount/";
  RestConfig rc;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 literal
  rc.server = "https://" + h + ":" + port;
  rc.ca_pem = read_file(sa + "ca.crt");
  rc.token_file = sa + "token";
  try {
    rc.ns = read_file(sa + "namespace");
  } catch (const ConfigError&) {
  }
  return rc;
}

RestConfig resolve_config(const std::string& flag) {
  if (!flag.empty()) return load_kubeconfig(flag);
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string first = env;
    first = first.substr(0, first.find(':'));
    return load_kubeconfig(first);
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST")) return in_cluster_config();
  const char* home = std::getenv("HOME");
  return load_kubeconfig(std::string(home ? home : "/root") + "/.kube/config");
}

}  // namespace ppu::op
