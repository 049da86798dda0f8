#include "core/config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>

namespace ppu {

namespace {

// The config spelling of every choice, in the order the docs list them.
template <class E>
using Table = std::vector<std::pair<std::string, E>>;

const Table<Activation>& table(Activation) {
  static const Table<Activation> t = {{"relu", Activation::Relu}, {"gelu", Activation::Gelu}};
  return t;
}
const Table<Method>& table(Method) {
  static const Table<Method> t = {{"ppu", Method::Ppu},
                                  {"diloco", Method::DiLoCo},
                                  {"streaming-diloco", Method::StreamingDiLoCo},
                                  {"ddp", Method::Ddp}};
  return t;
}
const Table<SliceMode>& table(SliceMode) {
  static const Table<SliceMode> t = {{"none", SliceMode::None},
                                     {"mlp", SliceMode::Mlp},
                                     {"mlp+heads", SliceMode::MlpHeads},
                                     {"mlp+heads+wo", SliceMode::MlpHeadsWo},
                                     {"horizontal", SliceMode::Horizontal}};
  return t;
}
const Table<Jacobian>& table(Jacobian) {
  static const Table<Jacobian> t = {
      {"full", Jacobian::Full}, {"slice", Jacobian::Slice}, {"slice+random", Jacobian::SliceRandom}};
  return t;
}
const Table<InnerOptimizerKind>& table(InnerOptimizerKind) {
  static const Table<InnerOptimizerKind> t = {{"adamw", InnerOptimizerKind::AdamW}, {"sgd", InnerOptimizerKind::Sgd}};
  return t;
}
const Table<LrScheduleKind>& table(LrScheduleKind) {
  static const Table<LrScheduleKind> t = {{"cosine", LrScheduleKind::Cosine}, {"constant", LrScheduleKind::Constant}};
  return t;
}
const Table<OuterOptimizerKind>& table(OuterOptimizerKind) {
  static const Table<OuterOptimizerKind> t = {{"nesterov", OuterOptimizerKind::Nesterov},
                                              {"average", OuterOptimizerKind::Average}};
  return t;
}
const Table<Grouping>& table(Grouping) {
  static const Table<Grouping> t = {{"layers", Grouping::Layers}, {"slices", Grouping::Slices}};
  return t;
}
const Table<WireDtype>& table(WireDtype) {
  static const Table<WireDtype> t = {{"fp32", WireDtype::Fp32}, {"bf16", WireDtype::Bf16}, {"int8", WireDtype::Int8}};
  return t;
}
const Table<FinalSync>& table(FinalSync) {
  static const Table<FinalSync> t = {{"average", FinalSync::Average}, {"none", FinalSync::None}};
  return t;
}
const Table<DataSource>& table(DataSource) {
  static const Table<DataSource> t = {{"synthetic", DataSource::Synthetic}, {"shards", DataSource::Shards}};
  return t;
}
const Table<DataSampling>& table(DataSampling) {
  static const Table<DataSampling> t = {{"iid", DataSampling::Iid}, {"contiguous", DataSampling::Contiguous}};
  return t;
}
const Table<Device>& table(Device) {
  static const Table<Device> t = {{"cpu", Device::Cpu}, {"cuda", Device::Cuda}};
  return t;
}
const Table<Dtype>& table(Dtype) {
  static const Table<Dtype> t = {{"fp32", Dtype::Fp32}, {"bf16", Dtype::Bf16}};
  return t;
}
const Table<Collective>& table(Collective) {
  static const Table<Collective> t = {{"ring", Collective::Ring}, {"direct", Collective::Direct}};
  return t;
}

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

// Every key of the schema, in one place, for both reading and writing. The model keys other
// than `preset` are visited after the preset has been applied (see Reader).
template <class V>
void visit_fields(Config& c, V& v) {
  v("model.layers", c.model.layers);
  v("model.d_model", c.model.d_model);
  v("model.heads", c.model.heads);
  v("model.vocab", c.model.vocab);
  v("model.seq_len", c.model.seq_len);
  v("model.activation", c.model.activation);
  v("method", c.method);
  v("ranks", c.ranks);
  v("slicing.mode", c.slicing.mode);
  v("slicing.slices", c.slicing.slices);
  v("slicing.jacobian", c.slicing.jacobian);
  v("inner.optimizer", c.inner.optimizer);
  v("inner.lr", c.inner.lr);
  v("inner.beta1", c.inner.beta1);
  v("inner.beta2", c.inner.beta2);
  v("inner.eps", c.inner.eps);
  v("inner.weight_decay", c.inner.weight_decay);
  v("inner.warmup_steps", c.inner.warmup_steps);
  v("inner.schedule", c.inner.schedule);
  v("inner.min_lr_ratio", c.inner.min_lr_ratio);
  v("inner.batch_size", c.inner.batch_size);
  v("inner.grad_clip", c.inner.grad_clip);
  v("inner.decay_embedding", c.inner.decay_embedding);
  v("inner.decay_norms", c.inner.decay_norms);
  v("outer.optimizer", c.outer.optimizer);
  v("outer.lr", c.outer.lr);
  v("outer.momentum", c.outer.momentum);
  v("outer.sync_every", c.outer.sync_every);
  v("outer.layers_per_fragment", c.outer.layers_per_fragment);
  v("outer.grouping", c.outer.grouping);
  v("outer.overlap_steps", c.outer.overlap_steps);
  v("outer.delta_dtype", c.outer.delta_dtype);
  v("outer.overlap_alpha", c.outer.overlap_alpha);
  v("outer.error_feedback", c.outer.error_feedback);
  v("outer.final_sync", c.outer.final_sync);
  v("outer.host_state_dir", c.outer.host_state_dir);
  v("data.source", c.data.source);
  v("data.path", c.data.path);
  v("data.tokenizer", c.data.tokenizer);
  v("data.sampling", c.data.sampling);
  v("data.synthetic_train_tokens", c.data.synthetic_train_tokens);
  v("data.synthetic_val_tokens", c.data.synthetic_val_tokens);
  v("data.synthetic_order", c.data.synthetic_order);
  v("data.synthetic_support", c.data.synthetic_support);
  v("train.steps", c.train.steps);
  v("train.seed", c.train.seed);
  v("train.eval_every", c.train.eval_every);
  v("train.eval_batches", c.train.eval_batches);
  v("train.log_every", c.train.log_every);
  v("train.threads", c.train.threads);
  v("train.device", c.train.device);
  v("train.dtype", c.train.dtype);
  v("train.recompute", c.train.recompute);
  v("checkpoint.dir", c.checkpoint.dir);
  v("checkpoint.every_rounds", c.checkpoint.every_rounds);
  v("checkpoint.keep", c.checkpoint.keep);
  v("checkpoint.start_over_if_unusable", c.checkpoint.start_over_if_unusable);
  v("metrics.port", c.metrics.port);
  v("network.bandwidth_gb_per_s", c.network.bandwidth_gb_per_s);
  v("network.timeout_s", c.network.timeout_s);
  v("network.message_bytes", c.network.message_bytes);
  v("network.collective", c.network.collective);
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
  void operator()(const std::string& k, int& v) { read_scalar(k, v, "an integer"); }
  void operator()(const std::string& k, int64_t& v) { read_scalar(k, v, "an integer"); }
  void operator()(const std::string& k, uint64_t& v) { read_scalar(k, v, "a non-negative integer"); }
  void operator()(const std::string& k, double& v) { read_scalar(k, v, "a number"); }
  void operator()(const std::string& k, bool& v) { read_scalar(k, v, "true or false"); }
  void operator()(const std::string& k, std::string& v) { read_scalar(k, v, "a string"); }
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  void operator()(const std::string& key, E& out) {
    std::string name = name_in_table(out);
    read_scalar(key, name, "a string");
    try {
      out = parse_choice<E>(key, name);
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
  void operator()(const std::string& k, T& v) {
    if constexpr (std::is_enum_v<T>) slot(k) = name_in_table(v);
    else slot(k) = v;
  }
};

void collect_leaves(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
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
template Activation parse_choice<Activation>(const std::string&, const std::string&);
template Method parse_choice<Method>(const std::string&, const std::string&);
template SliceMode parse_choice<SliceMode>(const std::string&, const std::string&);
template Jacobian parse_choice<Jacobian>(const std::string&, const std::string&);
template InnerOptimizerKind parse_choice<InnerOptimizerKind>(const std::string&, const std::string&);
template LrScheduleKind parse_choice<LrScheduleKind>(const std::string&, const std::string&);
template OuterOptimizerKind parse_choice<OuterOptimizerKind>(const std::string&, const std::string&);
template Grouping parse_choice<Grouping>(const std::string&, const std::string&);
template WireDtype parse_choice<WireDtype>(const std::string&, const std::string&);
template FinalSync parse_choice<FinalSync>(const std::string&, const std::string&);
template DataSource parse_choice<DataSource>(const std::string&, const std::string&);
template DataSampling parse_choice<DataSampling>(const std::string&, const std::string&);
template Device parse_choice<Device>(const std::string&, const std::string&);
template Dtype parse_choice<Dtype>(const std::string&, const std::string&);
template Collective parse_choice<Collective>(const std::string&, const std::string&);

std::vector<std::pair<std::string, std::vector<std::string>>> config_choices() {
  return {{"model.activation", names_of<Activation>()},
          {"method", names_of<Method>()},
          {"slicing.mode", names_of<SliceMode>()},
          {"slicing.jacobian", names_of<Jacobian>()},
          {"inner.optimizer", names_of<InnerOptimizerKind>()},
          {"inner.schedule", names_of<LrScheduleKind>()},
          {"outer.optimizer", names_of<OuterOptimizerKind>()},
          {"outer.grouping", names_of<Grouping>()},
          {"outer.delta_dtype", names_of<WireDtype>()},
          {"outer.final_sync", names_of<FinalSync>()},
          {"data.source", names_of<DataSource>()},
          {"data.sampling", names_of<DataSampling>()},
          {"train.device", names_of<Device>()},
          {"train.dtype", names_of<Dtype>()},
          {"network.collective", names_of<Collective>()}};
}

std::string choice_name(Activation v) { return name_in_table(v); }
std::string choice_name(Method v) { return name_in_table(v); }
std::string choice_name(SliceMode v) { return name_in_table(v); }
std::string choice_name(Jacobian v) { return name_in_table(v); }
std::string choice_name(InnerOptimizerKind v) { return name_in_table(v); }
std::string choice_name(LrScheduleKind v) { return name_in_table(v); }
std::string choice_name(OuterOptimizerKind v) { return name_in_table(v); }
std::string choice_name(Grouping v) { return name_in_table(v); }
std::string choice_name(WireDtype v) { return name_in_table(v); }
std::string choice_name(FinalSync v) { return name_in_table(v); }
std::string choice_name(DataSource v) { return name_in_table(v); }
std::string choice_name(DataSampling v) { return name_in_table(v); }
std::string choice_name(Device v) { return name_in_table(v); }
std::string choice_name(Dtype v) { return name_in_table(v); }
std::string choice_name(Collective v) { return name_in_table(v); }

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
  std::string preset = "small";
  reader("model.preset", preset);
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
  require(m.mlp_hidden() % n == 0,
          "slicing.slices N=" + str(n) + " must divide the MLP hidden size 4*model.d_model=" + str(m.mlp_hidden()));
  if (mode == SliceMode::MlpHeads || mode == SliceMode::MlpHeadsWo)
    require(m.heads % n == 0, "slicing.slices N=" + str(n) + " must divide model.heads=" + str(m.heads) +
                                  " in slicing.mode=" + slice_mode_name(mode));
  if (mode == SliceMode::Horizontal)
    require(m.layers % n == 0, "slicing.slices N=" + str(n) + " must divide model.layers=" + str(m.layers) +
                                   " in slicing.mode=horizontal");
}

void validate_config(const Config& c, int world_size) {
  const auto& m = c.model;
  require(m.layers > 0, "config key 'model.layers' must be > 0, got " + str(m.layers));
  require(m.d_model > 0, "config key 'model.d_model' must be > 0, got " + str(m.d_model));
  require(m.heads > 0 && m.d_model % m.heads == 0,
          "config key 'model.heads' (" + str(m.heads) + ") must divide model.d_model (" + str(m.d_model) + ")");
  require(m.head_dim() % 2 == 0,
          "model.d_model / model.heads must be even for rotary embeddings, got " + str(m.head_dim()));
  require(m.vocab > 1, "config key 'model.vocab' must be > 1, got " + str(m.vocab));
  require(m.seq_len > 1, "config key 'model.seq_len' must be > 1, got " + str(m.seq_len));
  require(c.ranks >= 1, "config key 'ranks' must be >= 1, got " + str(c.ranks));
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

  const auto& in = c.inner;
  require(in.lr > 0, "config key 'inner.lr' must be > 0, got " + str(in.lr));
  require(in.beta1 >= 0 && in.beta1 < 1, "config key 'inner.beta1' must be in [0, 1), got " + str(in.beta1));
  require(in.beta2 >= 0 && in.beta2 < 1, "config key 'inner.beta2' must be in [0, 1), got " + str(in.beta2));
  require(in.eps > 0, "config key 'inner.eps' must be > 0, got " + str(in.eps));
  require(in.weight_decay >= 0, "config key 'inner.weight_decay' must be >= 0, got " + str(in.weight_decay));
  require(in.warmup_steps >= 0, "config key 'inner.warmup_steps' must be >= 0, got " + str(in.warmup_steps));
  require(in.min_lr_ratio >= 0 && in.min_lr_ratio <= 1,
          "config key 'inner.min_lr_ratio' must be in [0, 1], got " + str(in.min_lr_ratio));
  require(in.batch_size > 0, "config key 'inner.batch_size' must be > 0, got " + str(in.batch_size));
  require(in.grad_clip >= 0, "config key 'inner.grad_clip' must be >= 0, got " + str(in.grad_clip));

  const auto& out = c.outer;
  require(out.lr > 0, "config key 'outer.lr' must be > 0, got " + str(out.lr));
  require(out.momentum >= 0 && out.momentum < 1,
          "config key 'outer.momentum' must be in [0, 1), got " + str(out.momentum));
  require(out.sync_every >= 1, "config key 'outer.sync_every' must be >= 1, got " + str(out.sync_every));
  require(out.layers_per_fragment >= 0,
          "config key 'outer.layers_per_fragment' must be >= 0, got " + str(out.layers_per_fragment));
  require(out.overlap_steps >= 0 && out.overlap_steps < out.sync_every,
          "config key 'outer.overlap_steps' must be in [0, outer.sync_every), got " + str(out.overlap_steps));
  require(out.overlap_alpha >= 0 && out.overlap_alpha <= 1,
          "config key 'outer.overlap_alpha' must be in [0, 1], got " + str(out.overlap_alpha));
  require(!(out.grouping == Grouping::Slices && c.method == Method::Ppu && c.slicing.mode == SliceMode::Horizontal),
          "config key 'outer.grouping' is 'slices' but slicing.mode=horizontal has no MLP slices to group by");

  require(c.data.source != DataSource::Shards || !c.data.path.empty(),
          "config key 'data.path' is required when data.source=shards");
  require(c.data.synthetic_order >= 1, "config key 'data.synthetic_order' must be >= 1");
  require(c.data.synthetic_support >= 2 && c.data.synthetic_support <= m.vocab,
          "config key 'data.synthetic_support' must be in [2, model.vocab], got " + str(c.data.synthetic_support));

  const auto& t = c.train;
  require(t.steps > 0, "config key 'train.steps' must be > 0, got " + str(t.steps));
  require(t.eval_every >= 0, "config key 'train.eval_every' must be >= 0, got " + str(t.eval_every));
  require(t.eval_batches >= 1, "config key 'train.eval_batches' must be >= 1, got " + str(t.eval_batches));
  require(t.log_every >= 1, "config key 'train.log_every' must be >= 1, got " + str(t.log_every));
  require(t.threads >= 0, "config key 'train.threads' must be >= 0, got " + str(t.threads));

  require(c.checkpoint.every_rounds >= 1, "config key 'checkpoint.every_rounds' must be >= 1");
  require(c.checkpoint.keep >= 1, "config key 'checkpoint.keep' must be >= 1");
  require(c.metrics.port >= 0 && c.metrics.port <= 65535,
          "config key 'metrics.port' must be in [0, 65535], got " + str(c.metrics.port));
  require(c.network.bandwidth_gb_per_s >= 0, "config key 'network.bandwidth_gb_per_s' must be >= 0");
  require(c.network.timeout_s > 0, "config key 'network.timeout_s' must be > 0");
  require(c.network.message_bytes >= 0, "config key 'network.message_bytes' must be >= 0");
}

std::string to_yaml(const Config& config) {
  Config copy = config;
  Writer writer{YAML::Node(YAML::NodeType::Map)};
  if (!copy.model.preset.empty()) writer.slot("model.preset") = copy.model.preset;
  visit_fields(copy, writer);
  YAML::Emitter out;
  out << writer.root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace ppu
