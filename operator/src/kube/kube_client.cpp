#include "kube/kube_client.h"

#include <curl/curl.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ppu::op {

std::string url_escape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

namespace {

struct GlobalInit {
  GlobalInit() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};
GlobalInit& global_init() {
  static GlobalInit g;
  return g;
}

size_t append_body(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::string query(const ListOptions& o, bool watch, int timeout_s) {
  std::string q;
  auto add = [&](const std::string& k, const std::string& v) {
    q += (q.empty() ? "?" : "&") + k + "=" + url_escape(v);
  };
  if (!o.label_selector.empty()) add("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) add("fieldSelector", o.field_selector);
  if (!o.resource_version.empty()) add("resourceVersion", o.resource_version);
  if (o.limit > 0) add("limit", std::to_string(o.limit));
  if (!o.continue_token.empty()) add("continue", o.continue_token);
  if (watch) {
    add("watch", "1");
    add("allowWatchBookmarks", "true");
    add("timeoutSeconds", std::to_string(timeout_s));
  }
  return q;
}

std::string read_token(const RestConfig& c) {
  if (!c.token_file.empty()) {
    std::ifstream f(c.token_file);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string t = ss.str();
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    if (!t.empty()) return t;
  }
  return c.token;
}

void set_blob(CURL* h, CURLoption opt, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(h, opt, &blob);
}

}  // namespace

KubeClient::KubeClient(RestConfig cfg) : cfg_(std::move(cfg)) { global_init(); }

KubeClient::~KubeClient() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* KubeClient::acquire() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void KubeClient::release(void* h) {
  curl_easy_reset(static_cast<CURL*>(h));  // keeps the connection cache, drops options
  std::lock_guard<std::mutex> l(mu_);
  idle_.push_back(h);
}

void KubeClient::configure(void* handle, std::vector<std::string>& header_storage, void** header_list) {
  CURL* h = static_cast<CURL*>(handle);
  if (!cfg_.ca_pem.empty()) set_blob(h, CURLOPT_CAINFO_BLOB, cfg_.ca_pem);
  if (!cfg_.client_cert_pem.empty()) {
    set_blob(h, CURLOPT_SSLCERT_BLOB, cfg_.client_cert_pem);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!cfg_.client_key_pem.empty()) {
    set_blob(h, CURLOPT_SSLKEY_BLOB, cfg_.client_key_pem);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  }
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, cfg_.insecure ? 0L : 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, cfg_.insecure ? 0L : 2L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
  std::string token = read_token(cfg_);
  if (!token.empty()) header_storage.push_back("Authorization: Bearer " + token);
  header_storage.emplace_back("Accept: application/json");
  header_storage.emplace_back("User-Agent: ppu-operator");
  curl_slist* list = nullptr;
  for (const auto& s : header_storage) list = curl_slist_append(list, s.c_str());
  *header_list = list;
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
}

Response KubeClient::request(const std::string& method, const std::string& path, const std::string& body,
                             const std::string& content_type) {
  CURL* h = static_cast<CURL*>(acquire());
  std::vector<std::string> hs;
  if (!content_type.empty()) hs.push_back("Content-Type: " + content_type);
  void* hl = nullptr;
  configure(h, hs, &hl);
  std::string url = cfg_.server + path, out;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  // A body for every write; DELETE carries one only when given (DeleteOptions), GET never.
  const bool sends_body = method == "DELETE" ? !body.empty() : method != "GET";
  if (sends_body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
  Response r;
  CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) {
    r.error = curl_easy_strerror(rc);
  } else {
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    r.body = json::parse(out, nullptr, false);
    if (r.body.is_discarded()) r.body = json(out);
    if (!r.ok() && r.body.is_object()) r.error = r.body.value("message", std::string());
  }
  curl_slist_free_all(static_cast<curl_slist*>(hl));
  release(h);
  return r;
}

Response KubeClient::get(ResourceKind r, const std::string& ns, const std::string& name) {
  return request("GET", resource(r).path(ns, name), "", "");
}

Response KubeClient::list(ResourceKind r, const std::string& ns, const ListOptions& o) {
  return request("GET", resource(r).path(ns) + query(o, false, 0), "", "");
}

Response KubeClient::list_all(ResourceKind r, const std::string& ns, const ListOptions& o) {
  ListOptions page = o;
  if (page.limit == 0) page.limit = 500;
  Response first = list(r, ns, page);
  if (!first.ok()) return first;
  while (true) {
    std::string cont = first.body["metadata"].value("continue", std::string());
    if (cont.empty()) break;
    page.continue_token = cont;
    page.resource_version.clear();  // continue tokens carry the snapshot
    Response next = list(r, ns, page);
    if (!next.ok()) return next;  // 410: the token expired, the caller relists
    for (auto& it : next.body["items"]) first.body["items"].push_back(std::move(it));
    first.body["metadata"]["continue"] = next.body["metadata"].value("continue", std::string());
  }
  return first;
}

Response KubeClient::create(ResourceKind r, const std::string& ns, const json& obj) {
  return request("POST", resource(r).path(ns), obj.dump(), "application/json");
}

Response KubeClient::replace(ResourceKind r, const std::string& ns, const std::string& name, const json& obj,
                             const std::string& sub) {
  return request("PUT", resource(r).path(ns, name, sub), obj.dump(), "application/json");
}

Response KubeClient::merge_patch(ResourceKind r, const std::string& ns, const std::string& name, const json& patch,
                                 const std::string& sub) {
  return request("PATCH", resource(r).path(ns, name, sub), patch.dump(), "application/merge-patch+json");
}

Response KubeClient::apply(ResourceKind r, const std::string& ns, const std::string& name, const json& obj,
                           const std::string& manager, bool force, const std::string& sub) {
  std::string path =
      resource(r).path(ns, name, sub) + "?fieldManager=" + url_escape(manager) + (force ? "&force=true" : "");
  return request("PATCH", path, obj.dump(), "application/apply-patch+yaml");
}

Response KubeClient::remove(ResourceKind r, const std::string& ns, const std::string& name,
                            const std::string& propagation, const std::string& uid, int64_t grace_period_s) {
  json opts = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", propagation}};
  if (!uid.empty()) opts["preconditions"] = {{"uid", uid}};
  if (grace_period_s >= 0) opts["gracePeriodSeconds"] = grace_period_s;
  return request("DELETE", resource(r).path(ns, name), opts.dump(), "application/json");
}

namespace {
struct WatchState {
  std::string buffer;
  const std::function<void(const json&)>* on_event;
  const std::function<bool()>* should_stop;
  bool gone = false;
};

size_t watch_chunk(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<WatchState*>(user);
  st->buffer.append(data, size * n);
  size_t pos;
  while ((pos = st->buffer.find('\n')) != std::string::npos) {
    std::string line = st->buffer.substr(0, pos);
    st->buffer.erase(0, pos + 1);
    if (line.empty()) continue;
    json ev = json::parse(line, nullptr, false);
    // Only watch events reach the handler: {"type": "...", "object": {...}}. A failed request's
    // Status body (e.g. a 503 while the API server restarts) or any other value is skipped;
    // the transfer's HTTP status then ends the watch as an error.
    if (ev.is_discarded() || !ev.is_object() || !ev.contains("type") || !ev["type"].is_string() ||
        !ev.contains("object") || !ev["object"].is_object())
      continue;
    if (ev["type"] == "ERROR" && ev["object"].value("code", 0) == 410) {
      st->gone = true;
      return 0;  // abort the transfer: the caller must relist
    }
    (*st->on_event)(ev);
  }
  return size * n;
}

int watch_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<WatchState*>(user);
  return (*st->should_stop)() ? 1 : 0;
}
}  // namespace

WatchEnd KubeClient::watch(ResourceKind r, const std::string& ns, const ListOptions& o, int timeout_s,
                           const std::function<void(const json&)>& on_event, const std::function<bool()>& should_stop) {
  // A dedicated handle: a watch holds its connection for minutes.
  CURL* h = curl_easy_init();
  std::vector<std::string> hs;
  void* hl = nullptr;
  configure(h, hs, &hl);
  std::string url = cfg_.server + resource(r).path(ns) + query(o, true, timeout_s);
  WatchState st{"", &on_event, &should_stop};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_chunk);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &st);
  // A silent dead peer (no FIN) is detected by the missing bookmarks/data within a minute.
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(timeout_s + 60));
  CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(static_cast<curl_slist*>(hl));
  curl_easy_cleanup(h);
  if (st.gone || status == 410) return WatchEnd::Gone;
  if (should_stop()) return WatchEnd::Stopped;
  if (rc != CURLE_OK || status != 200) return WatchEnd::Error;
  return WatchEnd::Closed;
}

Response KubeClient::http_get_text(const std::string& url, double timeout_s, std::string& text) {
  global_init();
  CURL* h = curl_easy_init();
  text.clear();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &text);
  Response r;
  CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) r.error = curl_easy_strerror(rc);
  else curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_cleanup(h);
  return r;
}

}  // namespace ppu::op
