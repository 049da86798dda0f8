#include "core/config.h"

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>

#include "core/decimal.h"

namespace ppu {

namespace {

// The config spelling of every choice, in the order the docs list them.
template <class E>
using Table = std::vector<std::pair<std::string, E>>;

#define VALUE(enumerator, spelling) {spelling, Enum::enumerator},
#define CHOICE(E, key, values)             \
  const Table<E>& table(E) {               \
    using Enum = E;                        \
    static const Table<Enum> t = {values}; \
    return t;                              \
  }
PPU_CONFIG_CHOICES
#undef CHOICE
#undef VALUE

template <class E>
std::string name_in_table(E value) {
  for (const auto& [name, v] : table(value))
    if (v == value) return name;
  return "?";
}

template <class E>
std::vector<std::string> names_of() {
  std::vector<std::string> names;
  for (const auto& entry : table(E{})) names.push_back(entry.first);
  return names;
}

// "a | b | c": the allowed names of a choice, for error messages.
template <class E>
std::string choices() {
  std::string s;
  for (const auto& name : names_of<E>()) s += (s.empty() ? "" : " | ") + name;
  return s;
}

bool from_preset(FromPreset) { return true; }
template <class T>
bool from_preset(const T&) {
  return false;
}

// Calls v(KeyMeta, field) for every key of config_keys.h, in file order; `C` is Config or const
// Config. model.preset is not visited: it is read first (parse_config) and decides the defaults
// of the other model keys.
template <class C, class V>
void visit_fields(C& c, V& v) {
#define PPU_VISIT_SECTION_KEY(section, name, type, default_value, bounds, doc) \
  v(KeyMeta{#section "." #name, bounds, doc, from_preset(default_value)}, c.section.name);
#define PPU_VISIT_TOP_KEY(section, name, type, default_value, bounds, doc) v(KeyMeta{#name, bounds, doc}, c.name);
  PPU_MODEL_KEYS(PPU_VISIT_SECTION_KEY)
  PPU_TOP_KEYS(PPU_VISIT_TOP_KEY)
  PPU_SECTION_KEYS(PPU_VISIT_SECTION_KEY)
#undef PPU_VISIT_SECTION_KEY
#undef PPU_VISIT_TOP_KEY
}

std::vector<std::string> split_dots(const std::string& key) {
  std::vector<std::string> parts;
  std::stringstream ss(key);
  std::string part;
  while (std::getline(ss, part, '.')) parts.push_back(part);
  return parts;
}

YAML::Node find(const YAML::Node& root, const std::string& key) {
  YAML::Node node = YAML::Clone(root);
  for (const auto& part : split_dots(key)) {
    if (!node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    YAML::Node child = node[part];
    if (!child.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    node = child;
  }
  return node;
}

// Reads typed values out of the YAML tree, naming the key in every error.
struct Reader {
  const YAML::Node& root;
  const std::string& origin;
  std::set<std::string> known;

  template <class T>
  void read_scalar(const std::string& key, T& out, const char* expected) {
    known.insert(key);
    YAML::Node node = find(root, key);
    if (!node.IsDefined() || node.IsNull()) return;
    if (!node.IsScalar()) throw ConfigError(origin + ": config key '" + key + "' must be " + expected);
    try {
      out = node.as<T>();
    } catch (const YAML::Exception&) {
      throw ConfigError(origin + ": config key '" + key + "' must be " + expected + ", got '" + node.Scalar() + "'");
    }
  }
  void operator()(const KeyMeta& m, int& v) { read_scalar(m.key, v, "an integer"); }
  void operator()(const KeyMeta& m, int64_t& v) { read_scalar(m.key, v, "an integer"); }
  void operator()(const KeyMeta& m, uint64_t& v) { read_scalar(m.key, v, "a non-negative integer"); }
  void operator()(const KeyMeta& m, double& v) { read_scalar(m.key, v, "a number"); }
  void operator()(const KeyMeta& m, bool& v) { read_scalar(m.key, v, "true or false"); }
  void operator()(const KeyMeta& m, std::string& v) { read_scalar(m.key, v, "a string"); }
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  void operator()(const KeyMeta& m, E& out) {
    std::string name = name_in_table(out);
    read_scalar(m.key, name, "a string");
    try {
      out = parse_choice<E>(m.key, name);
    } catch (const ConfigError& e) {
      throw ConfigError(origin + ": " + e.what());
    }
  }
};

// Writes every field back into a YAML tree.
struct Writer {
  YAML::Node root;
  YAML::Node slot(const std::string& key) {
    auto parts = split_dots(key);
    YAML::Node node = root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) node.reset(node[parts[i]]);
    return node[parts.back()];
  }
  template <class T>
  void operator()(const KeyMeta& m, const T& v) {
    if constexpr (std::is_enum_v<T>) slot(m.key) = name_in_table(v);
    else slot(m.key) = v;
  }
};

// Every key of one section into a JSON object (config_section_json).
struct SectionJsonWriter {
  std::string prefix;  // "inner."
  nlohmann::json out;
  template <class T>
  void operator()(const KeyMeta& m, const T& v) {
    const std::string key = m.key;
    if (key.rfind(prefix, 0) != 0) return;
    if constexpr (std::is_enum_v<T>) out[key.substr(prefix.size())] = name_in_table(v);
    else out[key.substr(prefix.size())] = v;
  }
};

// The bound a value breaks, as "must be > 0", "must be in [0, 1)"; empty when it keeps it.
std::string broken_bound(const Bounds& b, double v) {
  const bool low = b.has_min && (b.min_open ? !(v > b.min) : !(v >= b.min));
  const bool high = b.has_max && (b.max_open ? !(v < b.max) : !(v <= b.max));
  if (!low && !high) return "";
  if (b.has_min && b.has_max)
    return std::string("must be in ") + (b.min_open ? "(" : "[") + shortest_decimal(b.min) + ", " +
           shortest_decimal(b.max) + (b.max_open ? ")" : "]");
  if (b.has_min) return std::string("must be ") + (b.min_open ? "> " : ">= ") + shortest_decimal(b.min);
  return std::string("must be ") + (b.max_open ? "< " : "<= ") + shortest_decimal(b.max);
}

// Checks every numeric key against its bounds.
struct BoundsChecker {
  template <class T>
  void operator()(const KeyMeta& m, const T& v) {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const std::string broken = broken_bound(m.bounds, static_cast<double>(v));
      if (!broken.empty())
        throw ConfigError("config key '" + std::string(m.key) + "' " + broken + ", got " + shortest_decimal(v));
    }
  }
};

// Turns every key into a KeySchema row, its default read from a default Config.
struct Describer {
  std::vector<KeySchema> rows;
  template <class T>
  void operator()(const KeyMeta& m, const T& v) {
    KeySchema row{m.key, KeyType::String, std::nullopt, {}, m.bounds, m.doc};
    if constexpr (std::is_same_v<T, bool>) {
      row.type = KeyType::Bool;
      row.default_value = v ? "true" : "false";
    } else if constexpr (std::is_same_v<T, int>) {
      row.type = KeyType::Int;
      row.default_value = std::to_string(v);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      row.type = KeyType::Int64;
      row.default_value = std::to_string(v);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      row.type = KeyType::UInt64;
      row.default_value = std::to_string(v);
    } else if constexpr (std::is_same_v<T, double>) {
      row.type = KeyType::Double;
      row.default_value = shortest_decimal(v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      row.default_value = v;
    } else {
      static_assert(std::is_enum_v<T>, "a config key of a type config_schema() cannot describe");
      if (m.key != std::string(choice_key<T>()))  // config_choices.h and config_keys.h disagree
        throw std::logic_error(std::string("config key '") + m.key + "' has the choice of '" + choice_key<T>() + "'");
      row.type = KeyType::Choice;
      row.default_value = name_in_table(v);
      row.choices = names_of<T>();
    }
    if (m.from_preset) row.default_value.reset();
    rows.push_back(std::move(row));
  }
};

void collect_leaves(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const auto key = kv.first.as<std::string>();
      collect_leaves(kv.second, prefix.empty() ? key : prefix + "." + key, out);
    }
  } else {
    out.push_back(prefix);
  }
}

void apply_override(YAML::Node& root, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError("--set '" + assignment + "': expected dotted.key=value");
  const std::string key = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  auto parts = split_dots(key);
  YAML::Node node = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = node[parts[i]];
    if (child.IsDefined() && !child.IsMap() && !child.IsNull())
      throw ConfigError("--set '" + assignment + "': '" + parts[i] + "' is not a section");
    node.reset(child);
  }
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set '" + assignment + "': value is not valid YAML");
  }
  node[parts.back()] = parsed.IsNull() && !value.empty() ? YAML::Node(value) : parsed;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

template <class T>
std::string str(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

bool applies_weight_decay(const InnerConfig& inner, ParamRole role) {
  if (role == ParamRole::Embedding) return inner.decay_embedding;
  if (role == ParamRole::Norm) return inner.decay_norms;
  return true;
}

template <class E>
E parse_choice(const std::string& key, const std::string& name) {
  for (const auto& [spelling, value] : table(E{}))
    if (spelling == name) return value;
  throw ConfigError("config key '" + key + "' is '" + name + "'; expected one of " + choices<E>());
}
template <class E>
std::vector<std::string> choice_names() {
  return names_of<E>();
}

#define CHOICE(E, key, values)                                        \
  template E parse_choice<E>(const std::string&, const std::string&); \
  template std::vector<std::string> choice_names<E>();
PPU_CONFIG_CHOICES
#undef CHOICE

std::vector<KeySchema> config_schema() {
  const Config defaults;
  Describer describer;
  describer.rows.push_back(
      {"model.preset", KeyType::String, kDefaultModelPreset, model_preset_names(), kAny, kModelPresetDoc});
  visit_fields(defaults, describer);
  return describer.rows;
}

#define CHOICE(Enum, key, values) \
  std::string choice_name(Enum v) { return name_in_table(v); }
PPU_CONFIG_CHOICES
#undef CHOICE

int Config::effective_sit_out() const {
  if (outer.quorum_sit_out >= 0) return outer.quorum_sit_out;
  const bool supported =
      outer.sync_mode == SyncMode::Quorum && network.recovery == Recovery::Gang && outer.overlap_steps == 0;
  return supported ? kDefaultSitOut : 0;
}

int Config::effective_slices() const {
  if (method != Method::Ppu || slicing.mode == SliceMode::None) return 1;
  return slicing.slices;
}

bool Config::streaming() const {
  if (method == Method::StreamingDiLoCo) return true;
  return method == Method::Ppu && (outer.layers_per_fragment > 0 || outer.grouping == Grouping::Slices);
}

Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                    const std::string& origin) {
  YAML::Node root;
  try {
    root = yaml_text.empty() ? YAML::Node(YAML::NodeType::Map) : YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin + ": not valid YAML: " + e.msg + " (line " + std::to_string(e.mark.line + 1) + ")");
  }
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError(origin + ": the top level must be a mapping of sections");
  for (const auto& o : overrides) apply_override(root, o);

  Config config;
  Reader reader{root, origin, {}};
  std::string preset = kDefaultModelPreset;
  reader.read_scalar("model.preset", preset, "a string");
  auto spec = model_preset(preset);
  if (!spec) {
    std::string names;
    for (const auto& n : model_preset_names()) names += (names.empty() ? "" : " | ") + n;
    throw ConfigError(origin + ": config key 'model.preset' is '" + preset + "'; expected one of " + names);
  }
  config.model = *spec;
  visit_fields(config, reader);

  std::vector<std::string> leaves;
  collect_leaves(root, "", leaves);
  for (const auto& leaf : leaves)
    if (!reader.known.count(leaf)) throw ConfigError(origin + ": unknown config key '" + leaf + "'");
  validate_config(config, config.ranks);
  return config;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::string text;
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in) throw ConfigError("cannot read config file '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  return parse_config(text, overrides, path.empty() ? "<defaults>" : path);
}

void check_slicing(const ModelSpec& m, SliceMode mode, int world_size, int n) {
  require(world_size >= 1, "WORLD_SIZE must be >= 1, got " + str(world_size));
  require(n >= 1, "config key 'slicing.slices' must be >= 1, got " + str(n));
  if (mode == SliceMode::None) return;
  require(world_size % n == 0, "ranks K=" + str(world_size) + " must be a multiple of slicing.slices N=" + str(n) +
                                   " (every slice needs the same number of owners)");
  const SlicingDivides divides = slicing_divides(mode);
  if (divides.mlp_hidden)
    require(m.mlp_hidden() % n == 0,
            "slicing.slices N=" + str(n) + " must divide the MLP hidden size 4*model.d_model=" + str(m.mlp_hidden()));
  if (divides.heads)
    require(m.heads % n == 0, "slicing.slices N=" + str(n) + " must divide model.heads=" + str(m.heads) +
                                  " in slicing.mode=" + slice_mode_name(mode));
  if (divides.layers)
    require(m.layers % n == 0, "slicing.slices N=" + str(n) + " must divide model.layers=" + str(m.layers) +
                                   " in slicing.mode=" + slice_mode_name(mode));
}

SlicingDivides slicing_divides(SliceMode mode) {
  switch (mode) {
    case SliceMode::None: return {};
    case SliceMode::Mlp: return {true, false, false};
    case SliceMode::MlpHeads:
    case SliceMode::MlpHeadsWo: return {true, true, false};
    case SliceMode::Horizontal: return {true, false, true};
    case SliceMode::Heads: return {false, true, false};
  }
  throw std::logic_error("slicing_divides: a slicing.mode without a row");
}

void validate_config(const Config& c, int world_size) {
  BoundsChecker bounds;
  visit_fields(c, bounds);

  // Rules that relate keys (bounds of single keys are config_keys.h's).
  const auto& m = c.model;
  require(m.d_model % m.heads == 0,
          "config key 'model.heads' (" + str(m.heads) + ") must divide model.d_model (" + str(m.d_model) + ")");
  require(m.head_dim() % 2 == 0,
          "model.d_model / model.heads must be even for rotary embeddings, got " + str(m.head_dim()));
  require(world_size >= 1, "WORLD_SIZE must be >= 1, got " + str(world_size));

  if (c.method == Method::Ppu && c.slicing.mode != SliceMode::None)
    check_slicing(m, c.slicing.mode, world_size, c.slicing.slices);
  const auto jac = c.slicing.jacobian;
  if (jac != Jacobian::Full) {
    const bool mlp_slices = c.slicing.mode == SliceMode::Mlp || c.slicing.mode == SliceMode::MlpHeads ||
                            c.slicing.mode == SliceMode::MlpHeadsWo;
    require(c.method == Method::Ppu && mlp_slices && c.slicing.slices >= (jac == Jacobian::Slice ? 1 : 2),
            "config key 'slicing.jacobian' is '" + choice_name(jac) + "': it needs method=ppu with MLP slices " +
                "(slicing.mode mlp, mlp+heads or mlp+heads+wo) and slicing.slices >= " +
                (jac == Jacobian::Slice ? "1" : "2"));
  }

  const auto& out = c.outer;
  require(out.overlap_steps < out.sync_every,
          "config key 'outer.overlap_steps' must be in [0, outer.sync_every), got " + str(out.overlap_steps));
  require(!(out.grouping == Grouping::Slices && c.method == Method::Ppu && c.slicing.mode == SliceMode::Horizontal),
          "config key 'outer.grouping' is 'slices' but slicing.mode=horizontal has no MLP slices to group by");

  if (out.sync_mode == SyncMode::Quorum) {
    require(c.method != Method::Ddp, "config key 'outer.sync_mode' is 'quorum' but method=ddp has no outer syncs");
    require(out.quorum_grace_max_s >= out.quorum_grace_min_s,
            "config key 'outer.quorum_grace_max_s' (" + str(out.quorum_grace_max_s) +
                ") must be at least outer.quorum_grace_min_s (" + str(out.quorum_grace_min_s) + ")");
  }
  // A rank sitting out holds no part of the group's collectives: live recovery's agreement on
  // each collective and the outer syncs in flight across sync points both assume every member.
  if (out.quorum_sit_out > 0) {
    require(out.sync_mode == SyncMode::Quorum,
            "config key 'outer.quorum_sit_out' (" + str(out.quorum_sit_out) + ") needs outer.sync_mode quorum");
    require(c.network.recovery == Recovery::Gang, "config key 'outer.quorum_sit_out' (" + str(out.quorum_sit_out) +
                                                      ") needs network.recovery gang (live recovery: not yet)");
    require(out.overlap_steps == 0, "config key 'outer.quorum_sit_out' (" + str(out.quorum_sit_out) +
                                        ") needs outer.overlap_steps = 0, got " + str(out.overlap_steps));
  }

  // Live recovery re-runs an interrupted outer sync with the survivors' deltas: the deltas must
  // still be this rank's untouched local progress (no overlap, no error-feedback residuals
  // already spent), and DDP's per-step gradient all-reduce has no round to finish degraded.
  if (c.network.recovery == Recovery::Live) {
    require(c.method != Method::Ddp, "config key 'network.recovery' is 'live' but method=ddp has no outer rounds");
    require(out.overlap_steps == 0,
            "config key 'network.recovery' is 'live': it needs outer.overlap_steps = 0, got " + str(out.overlap_steps));
    require(!out.error_feedback, "config key 'network.recovery' is 'live': it needs outer.error_feedback = false");
    require(c.network.heartbeat_s > 0,
            "config key 'network.recovery' is 'live': it needs network.heartbeat_s > 0 to tell a lost rank");
  }
  // An elastic job (docs/RESIZE.md): every slice keeps an owner at its smallest size.
  if (c.network.min_ranks > 0) {
    const std::string key = "config key 'network.min_ranks' (" + str(c.network.min_ranks) + ")";
    require(c.network.recovery == Recovery::Live, key + " needs network.recovery live (a gang job has one size)");
    require(c.network.min_ranks <= world_size, key + " must be at most WORLD_SIZE (" + str(world_size) + ")");
    require(c.method != Method::Ppu || c.slicing.mode == SliceMode::None || c.network.min_ranks >= c.slicing.slices,
            key + " must be at least slicing.slices (" + str(c.slicing.slices) + "): every slice needs an owner");
  }

  require(c.data.source != DataSource::Shards || !c.data.path.empty(),
          "config key 'data.path' is required when data.source=shards");
  require(c.train.profile_dir.empty() || c.train.profile_first_step < c.train.steps,
          "config key 'train.profile_first_step' (" + str(c.train.profile_first_step) +
              ") must be below train.steps (" + str(c.train.steps) + ") when train.profile_dir is set");
  require(c.data.synthetic_support <= m.vocab,
          "config key 'data.synthetic_support' must be in [2, model.vocab], got " + str(c.data.synthetic_support));
}

std::string to_yaml(const Config& config) {
  Writer writer{YAML::Node(YAML::NodeType::Map)};
  if (!config.model.preset.empty()) writer.slot("model.preset") = config.model.preset;
  visit_fields(config, writer);
  YAML::Emitter out;
  out << writer.root;
  return std::string(out.c_str()) + "\n";
}

nlohmann::json config_section_json(const Config& config, const std::string& section) {
  SectionJsonWriter writer{section + ".", nlohmann::json::object()};
  visit_fields(config, writer);
  return writer.out;
}

}  // namespace ppu
