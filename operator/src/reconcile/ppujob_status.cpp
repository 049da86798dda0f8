#include "reconcile/ppujob_status.h"

#include <algorithm>
#include <stdexcept>

#include "kube/rfc3339.h"

namespace ppu::op {

namespace {

// JSON from the field lists (api_fields.h): a member is written under its key when it has a
// value (an optional that is set, any other member always; conditions when listed), and read back
// from it; `path` names the field in errors ("status.result.tokens").
template <class T>
json to_value(const T& v);
json to_value(JobPhase p);
json to_value(const IntOrString& v);
template <class T>
json to_value(const std::vector<T>& list);

template <class T>
void write_field(json& j, const char* key, const T& v) {
  j[key] = to_value(v);
}
template <class T>
void write_field(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = to_value(*v);
}
void write_field(json& j, const char* key, const ConditionList& v) {
  if (v.listed || !v.empty()) j[key] = to_value(static_cast<const std::vector<Condition>&>(v));
}

template <class T>
json to_value(const T& v) {
  if constexpr (kIsFieldStruct<T>) {
    json j = json::object();
    FieldList<T>::visit(v, [&](const ApiField& field, const auto& member) { write_field(j, field.key, member); });
    return j;
  } else {
    return json(v);
  }
}
json to_value(JobPhase p) { return to_string(p); }
json to_value(const IntOrString& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}
template <class T>
json to_value(const std::vector<T>& list) {
  json a = json::array();
  for (const auto& item : list) a.push_back(to_value(item));
  return a;
}

const json& object_or_empty(const json& j, const std::string& path) {
  static const json empty = json::object();
  if (j.is_null()) return empty;
  if (!j.is_object()) throw std::invalid_argument(path + ": not an object");
  return j;
}

template <class T>
void from_value(const json& v, T& out, const std::string& path);
void from_value(const json& v, JobPhase& out, const std::string& path);
void from_value(const json& v, IntOrString& out, const std::string& path);
template <class T>
void from_value(const json& v, std::vector<T>& out, const std::string& path);

// A present, non-null key read into `out` (an optional is reset first).
template <class T>
void read_field(const json& o, const char* key, T& out, const std::string& path) {
  auto it = o.find(key);
  if (it != o.end() && !it->is_null()) from_value(*it, out, path);
}
template <class T>
void read_field(const json& o, const char* key, std::optional<T>& out, const std::string& path) {
  out.reset();
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return;
  T v{};
  from_value(*it, v, path);
  out = std::move(v);
}
void read_field(const json& o, const char* key, ConditionList& out, const std::string& path) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return;
  from_value(*it, static_cast<std::vector<Condition>&>(out), path);
  out.listed = true;
}

template <class T>
void read_fields(const json& j, T& obj, const std::string& path) {
  const json& o = object_or_empty(j, path);
  obj = T{};
  FieldList<T>::visit(
      obj, [&](const ApiField& field, auto& member) { read_field(o, field.key, member, path + "." + field.key); });
}

template <class T>
void from_value(const json& v, T& out, const std::string& path) {
  if constexpr (kIsFieldStruct<T>) read_fields(v, out, path);
  else out = v.get<T>();
}
void from_value(const json& v, JobPhase& out, const std::string& path) {
  const auto word = v.get<std::string>();
  const auto p = parse_phase(word);
  if (!p) throw std::invalid_argument(path + ": '" + word + "' is not a PPUJob phase");
  out = *p;
}
void from_value(const json& v, IntOrString& out, const std::string& path) {
  if (v.is_string()) out = v.get<std::string>();
  else if (v.is_number_integer()) out = v.get<int64_t>();
  else throw std::invalid_argument(path + ": neither an integer nor a string");
}
template <class T>
void from_value(const json& v, std::vector<T>& out, const std::string& path) {
  out.clear();
  for (const auto& item : v.get_ref<const json::array_t&>()) {
    T value{};
    from_value(item, value, path + "[]");
    out.push_back(std::move(value));
  }
}

}  // namespace

const char* to_string(JobPhase p) {
  for (const auto& [ph, word] : kPhaseWords)
    if (ph == p) return word;
  return "?";
}

std::optional<JobPhase> parse_phase(const std::string& s) {
  for (const auto& [ph, word] : kPhaseWords)
    if (s == word) return ph;
  return std::nullopt;
}

const Condition* PPUJobStatus::condition(const std::string& type) const {
  for (const auto& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

void PPUJobStatus::set_condition(const std::string& type, const std::string& cond_status, const std::string& why,
                                 const std::string& text, int64_t now, int64_t generation) {
  conditions.listed = true;
  Condition cond;
  cond.type = type;
  cond.status = cond_status;
  cond.observed_generation = generation;
  cond.last_transition_time = format_rfc3339(now);
  cond.reason = why;
  cond.message = text;
  for (auto& c : conditions) {
    if (c.type != type) continue;
    if (c.status == cond_status && !c.last_transition_time.empty()) cond.last_transition_time = c.last_transition_time;
    c = cond;
    return;
  }
  conditions.push_back(cond);
}

void PPUJobStatus::remove_condition(const std::string& type) {
  conditions.erase(
      std::remove_if(conditions.begin(), conditions.end(), [&](const Condition& c) { return c.type == type; }),
      conditions.end());
}

PPUJobStatus status_of(const json& job) {
  auto it = job.find("status");
  if (it == job.end()) return PPUJobStatus{};
  return it->get<PPUJobStatus>();
}

void to_json(json& j, const Condition& c) { j = to_value(c); }
void from_json(const json& j, Condition& c) { read_fields(j, c, FieldList<Condition>::kName); }
void to_json(json& j, const RecoveringRank& r) { j = to_value(r); }
void from_json(const json& j, RecoveringRank& r) { read_fields(j, r, FieldList<RecoveringRank>::kName); }
void to_json(json& j, const RecoveryRecord& r) { j = to_value(r); }
void from_json(const json& j, RecoveryRecord& r) { read_fields(j, r, FieldList<RecoveryRecord>::kName); }
void to_json(json& j, const JobResult& r) { j = to_value(r); }
void from_json(const json& j, JobResult& r) { read_fields(j, r, FieldList<JobResult>::kName); }
void to_json(json& j, const ExportedModel& x) { j = to_value(x); }
void from_json(const json& j, ExportedModel& x) { read_fields(j, x, FieldList<ExportedModel>::kName); }
void to_json(json& j, const JobStop& x) { j = to_value(x); }
void from_json(const json& j, JobStop& x) { read_fields(j, x, FieldList<JobStop>::kName); }
void to_json(json& j, const JobResize& x) { j = to_value(x); }
void from_json(const json& j, JobResize& x) { read_fields(j, x, FieldList<JobResize>::kName); }

void to_json(json& j, const PPUJobStatus& s) {
  j = to_value(s);
  if (s.unknown.is_object())
    for (const auto& [k, v] : s.unknown.items())
      if (!j.contains(k)) j[k] = v;
}

void from_json(const json& j, PPUJobStatus& s) {
  read_fields(j, s, "status");
  if (j.is_null()) return;
  std::vector<std::string> listed;
  FieldList<PPUJobStatus>::visit(s, [&](const ApiField& field, const auto&) { listed.emplace_back(field.key); });
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(listed.begin(), listed.end(), it.key()) == listed.end()) s.unknown[it.key()] = it.value();
}

}  // namespace ppu::op
