// The one versioning scheme of the JSON a PPU process leaves as its pod's termination message, read
// back by the operator: ppu-train's run result (core/run_result.h) and ppu-export's export result
// (core/export_result.h). A message is one compact JSON object whose key `Message::kKind` holds its
// version `Message::kVersion` ({"ppu_result":1,...}, {"ppu_export":1,...}), beside the fields that
// `Message::visit` names, each once, for writer and reader alike. parse_message() accepts exactly
// that kind and version with every field present and of its JSON type (an integer for int64_t, a
// number for double, a string for std::string), and returns nullopt for anything else: a failure
// reason in plain text, an older image's message, a truncated or foreign JSON. A message longer
// than `Message::kMaxBytes` is refused when written (the kubelet keeps 4096 bytes of one).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace ppu::result_message {

namespace detail {
inline bool has_type(const nlohmann::json& v, const int64_t*) { return v.is_number_integer(); }
inline bool has_type(const nlohmann::json& v, const double*) { return v.is_number(); }
inline bool has_type(const nlohmann::json& v, const std::string*) { return v.is_string(); }
}  // namespace detail

template <class Message>
std::string format_message(const Message& m) {
  nlohmann::json j = {{Message::kKind, Message::kVersion}};
  Message::visit(m, [&](const char* key, const auto& value) { j[key] = value; });
  std::string out = j.dump();
  if (out.size() > Message::kMaxBytes)
    throw std::length_error(std::string(Message::kKind) + " message of " + std::to_string(out.size()) +
                            " bytes exceeds " + std::to_string(Message::kMaxBytes));
  return out;
}

template <class Message>
std::optional<Message> parse_message(const std::string& text) {
  if (text.size() > Message::kMaxBytes + 16) return std::nullopt;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains(Message::kKind) || j[Message::kKind] != Message::kVersion) return std::nullopt;
  Message m;
  bool complete = true;
  Message::visit(m, [&](const char* key, auto& value) {
    if (!complete) return;
    const auto it = j.find(key);
    if (it == j.end() || !detail::has_type(*it, &value)) {
      complete = false;
      return;
    }
    it->get_to(value);
  });
  if (!complete) return std::nullopt;
  return m;
}

}  // namespace ppu::result_message
