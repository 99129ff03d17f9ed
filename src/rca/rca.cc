// The learned stage's model: training, prediction and the model directory
// (include/teller/rca/rca.h). Torch-free; the network is behind src/rca/network.h.
#include "teller/rca/rca.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "src/rca/encode.h"
#include "src/rca/network.h"
#include "src/rca/text.h"
#include "teller/core/crc32c.h"
#include "teller/core/file_util.h"
#include "teller/core/json_reader.h"
#include "teller/core/json_writer.h"
#include "teller/tpe/model.h"

namespace teller::rca {

using internal::EncodedStep;
using internal::TextVocabulary;

struct Model::Impl {
  ModelConfig config;
  tpe::Model vocabulary;
  TextVocabulary text;  // the words of the MoT or single stream; empty for the trace encoder
  std::unique_ptr<internal::Network> network;
  TrainingLog log;
  std::vector<int> fault_classes;
};

bool Available() { return internal::TorchAvailable(); }

const char* VariantName(Variant variant) {
  switch (variant) {
    case Variant::kMot:
      return "mot";
    case Variant::kSingle:
      return "single";
    case Variant::kGcn:
      break;
  }
  return "gcn";
}

bool ParseVariant(std::string_view text, Variant* out) {
  if (text == "gcn") {
    *out = Variant::kGcn;
  } else if (text == "mot") {
    *out = Variant::kMot;
  } else if (text == "single") {
    *out = Variant::kSingle;
  } else {
    return false;
  }
  return true;
}

namespace {

// The name model.json gives each network.
const char* NetworkName(Variant variant) {
  switch (variant) {
    case Variant::kMot:
      return "mot";
    case Variant::kSingle:
      return "single-stream";
    case Variant::kGcn:
      break;
  }
  return "trace-encoder-gcn";
}

// The ranges a config must lie in (Train's options and a loaded model.json alike).
Status CheckConfig(const ModelConfig& c) {
  if (c.width < 1 || c.width > 4096 || c.hidden < 1 || c.hidden > 4096 || c.layers < 0 ||
      c.layers > 64 || c.max_depth < 1 || c.max_depth > 65536) {
    return Status::Error("config out of range");
  }
  if (ReadsText(c.variant) &&
      (c.heads < 1 || c.width % c.heads != 0 || c.mot_layers < 0 || c.mot_layers > 64 ||
       c.max_ranks < 1 || c.max_ranks > 1024 || c.max_log_tokens < 0 || c.max_log_tokens > 65536 ||
       c.max_explanation_tokens < 1 || c.max_explanation_tokens > 4096 ||
       c.text_vocab < TextVocabulary::kSpecials || c.text_vocab > (1u << 20))) {
    return Status::Error(std::string(VariantName(c.variant)) +
                         " config out of range (heads must divide width)");
  }
  if (c.variant == Variant::kSingle && (c.max_trace_tokens < 1 || c.max_trace_tokens > 65536))
    return Status::Error("single config out of range (max_trace_tokens 1 to 65536)");
  if (!c.trace_stream && (!ReadsText(c.variant) || !c.log_stream))
    return Status::Error(
        "a model without its trace stream is a MoT or single stream that reads "
        "the logs");
  if (!c.log_stream && !ReadsText(c.variant))
    return Status::Error("only a MoT or single stream reads a log stream to leave out");
  return Status::Ok();
}

// What a MoT or single stream without its trace stream reads for every step: one root token (id 0)
// of no duration, the same for all, so that nothing of the trace reaches the heads.
EncodedStep BlankStep() {
  EncodedStep s;
  s.token = {0};
  s.parent = {-1};
  s.depth = {0};
  s.log_duration = {0.0f};
  s.relative = {0.0f};
  return s;
}

// The networks that can have an evidence head: those that read the trace's tokens (not a
// MoT or a single stream without its trace stream).
bool HasEvidenceHead(const ModelConfig& c) { return c.variant == Variant::kGcn || c.trace_stream; }

// Per token of `step`, 1 when it covers one of `nodes` (step record ids), else 0.
std::vector<float> EvidenceTargets(const EncodedStep& step, const std::vector<uint32_t>& nodes) {
  const std::set<uint32_t> wanted(nodes.begin(), nodes.end());
  std::vector<float> out(step.size(), 0.0f);
  for (size_t i = 0; i < step.size() && i < step.span.size(); ++i) {
    for (uint32_t p = step.span[i].first; p <= step.span[i].second && p < step.node.size(); ++p) {
      if (wanted.count(step.node[p]) > 0) {
        out[i] = 1.0f;
        break;
      }
    }
  }
  return out;
}

// The step's nodes with the evidence probability of the token covering each: the
// kEvidenceNodes highest, highest first, ties by node id.
std::vector<std::pair<uint32_t, float>> EvidenceNodes(const EncodedStep& step,
                                                      const std::vector<float>& token_prob) {
  std::vector<std::pair<uint32_t, float>> nodes;
  for (size_t i = 0; i < token_prob.size() && i < step.span.size(); ++i) {
    for (uint32_t p = step.span[i].first; p <= step.span[i].second && p < step.node.size(); ++p)
      nodes.emplace_back(step.node[p], token_prob[i]);
  }
  const size_t k = std::min(kEvidenceNodes, nodes.size());
  std::partial_sort(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(k), nodes.end(),
                    [](const auto& a, const auto& b) {
                      return a.second != b.second ? a.second > b.second : a.first < b.first;
                    });
  nodes.resize(k);
  return nodes;
}

}  // namespace

FaultCategory StepOutput::Fault(const std::vector<int>& allowed) const {
  int best = -1;
  for (int c = 0; c < kFaultCategoryCount; ++c) {
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), c) == allowed.end()) continue;
    if (best < 0 || fault[c] > fault[best]) best = c;
  }
  return kAllFaultCategories[best < 0 ? 0 : best];
}

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
const ModelConfig& Model::config() const { return impl_->config; }
const TrainingLog& Model::training() const { return impl_->log; }
const std::vector<int>& Model::fault_classes() const { return impl_->fault_classes; }

Result<Model> Model::Train(const Corpus& corpus, const std::vector<Sample>& train,
                           const TrainOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (train.empty()) return Status::Error("no training samples");
  if (options.epochs < 1 || options.batch < 1)
    return Status::Error("epochs and batch must be at least 1");
  if (Status s = CheckConfig(options.config); !s.ok()) return s;
  Model m;
  Impl& impl = *m.impl_;
  impl.config = options.config;
  // The trace encoder and the MoT (with its trace stream) have an evidence head; model.json
  // says whether this one does.
  impl.config.evidence_head = options.config.evidence_head && HasEvidenceHead(impl.config);
  const bool reads_text = ReadsText(impl.config.variant);
  std::vector<uint32_t> steps;
  {
    std::set<uint32_t> distinct;
    for (const Sample& s : train) distinct.insert(s.step);
    steps.assign(distinct.begin(), distinct.end());
  }
  Result<tpe::Model> vocab = internal::TrainVocabulary(corpus, steps, impl.config.tpe_vocab);
  if (!vocab.ok()) return vocab.status();
  impl.vocabulary = std::move(vocab).value();
  Result<std::vector<EncodedStep>> encoded =
      internal::EncodeCorpus(corpus, impl.vocabulary, impl.config, steps);
  if (!encoded.ok()) return encoded.status();
  if (reads_text) {
    // The words of the training part's log lines and explanations.
    std::vector<std::string_view> texts;
    for (const Sample& s : train) {
      if (impl.config.log_stream) {
        for (const std::string& line : s.logs) texts.push_back(line);
      }
      texts.push_back(s.explanation);
    }
    impl.text = TextVocabulary::Train(texts, impl.config.text_vocab);
  }
  auto net = internal::MakeNetwork(impl.config, impl.vocabulary.size(),
                                   static_cast<uint32_t>(impl.text.size()), options.seed);
  if (!net.ok()) return net.status();
  impl.network = std::move(net).value();

  std::vector<internal::Example> x;
  std::vector<internal::Target> y;
  std::set<int> faults;
  const EncodedStep blank = BlankStep();
  for (const Sample& s : train) {
    internal::Example e;
    e.step = impl.config.trace_stream ? &(*encoded)[s.step] : &blank;
    internal::Target t;
    for (int v = 0; v < kViewsCount; ++v) t.abnormal[v] = s.abnormal[v] ? 1.0f : 0.0f;
    if (s.fault >= 0 && s.fault < kFaultCategoryCount) {
      t.fault = s.fault;
      faults.insert(s.fault);
    }
    if (reads_text) {
      if (impl.config.log_stream)
        e.log = internal::LogTokens(impl.text, s.logs, impl.config.max_log_tokens);
      t.explanation = impl.text.Words(s.explanation);
    }
    if (impl.config.evidence_head) {  // (never with a blank trace stream)
      for (int v = 0; v < kViewsCount; ++v) {
        if (s.abnormal[v]) t.evidence[v] = EvidenceTargets(*e.step, s.nodes[v]);
      }
    }
    x.push_back(std::move(e));
    y.push_back(std::move(t));
  }
  impl.fault_classes.assign(faults.begin(), faults.end());
  Result<std::vector<double>> losses = impl.network->Train(x, y, options);
  if (!losses.ok()) return losses.status();
  impl.log.epoch_loss = std::move(losses).value();
  impl.log.samples = train.size();
  impl.log.steps = steps.size();
  impl.log.parameters = impl.network->Parameters();
  impl.log.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

Result<std::vector<StepOutput>> Model::Predict(const Corpus& corpus,
                                               const std::vector<uint32_t>& steps) const {
  std::vector<Query> queries;
  for (uint32_t s : steps) queries.push_back({s, nullptr});
  return Predict(corpus, queries);
}

Result<std::vector<StepOutput>> Model::Predict(const Corpus& corpus,
                                               const std::vector<Query>& queries) const {
  if (!impl_->network)
    return Status::Error("the model has no network (neither trained nor loaded)");
  if (queries.empty()) return std::vector<StepOutput>{};
  std::vector<uint32_t> steps;
  for (const Query& q : queries) steps.push_back(q.step);
  Result<std::vector<EncodedStep>> encoded =
      internal::EncodeCorpus(corpus, impl_->vocabulary, impl_->config, steps);
  if (!encoded.ok()) return encoded.status();
  const bool reads_text = ReadsText(impl_->config.variant);
  std::vector<internal::Example> x;
  const EncodedStep blank = BlankStep();
  for (const Query& q : queries) {
    internal::Example e;
    e.step = impl_->config.trace_stream ? &(*encoded)[q.step] : &blank;
    if (reads_text && impl_->config.log_stream && q.logs != nullptr) {
      e.log = internal::LogTokens(impl_->text, *q.logs, impl_->config.max_log_tokens);
    }
    x.push_back(std::move(e));
  }
  Result<std::vector<internal::Output>> outputs = impl_->network->Predict(x);
  if (!outputs.ok()) return outputs.status();
  std::vector<StepOutput> out;
  for (size_t q = 0; q < outputs->size(); ++q) {
    internal::Output& o = (*outputs)[q];
    for (int v = 0; v < kViewsCount; ++v) {
      if (!o.evidence[v].empty()) o.heads.evidence[v] = EvidenceNodes(*x[q].step, o.evidence[v]);
    }
    // Onto the schema: vocabulary words only, at most max_explanation_tokens of them.
    if (o.explanation.size() > static_cast<size_t>(impl_->config.max_explanation_tokens))
      o.explanation.resize(static_cast<size_t>(impl_->config.max_explanation_tokens));
    o.heads.explanation = impl_->text.Join(o.explanation);
    out.push_back(std::move(o.heads));
  }
  return out;
}

namespace {

constexpr const char* kModelFormat = "teller-rca-model";
constexpr const char* kWeightsFile = "weights.pt";
constexpr const char* kTextFile = "text.json";

Status ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot read (" + std::strerror(errno) + ")");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::Error(path + ": read error");
  *out = std::move(buffer).str();
  return Status::Ok();
}

// The file that model.json's object `key` ({"file","bytes","crc32c"}) names, read whole and
// checked against its size and checksum; errors name the file.
Status ReadCheckedFile(const JsonContext& ctx, simdjson::ondemand::document& doc,
                       const std::string& key, const std::string& dir, std::string* path,
                       std::string* out) {
  std::string file;
  uint64_t bytes = 0, crc = 0;
  simdjson::ondemand::object w;
  TELLER_RETURN_IF_ERROR(ctx.Field(doc, key, &w));
  TELLER_RETURN_IF_ERROR(ctx.Field(w, "file", &file, key));
  TELLER_RETURN_IF_ERROR(ctx.Field(w, "bytes", &bytes, key));
  TELLER_RETURN_IF_ERROR(ctx.Field(w, "crc32c", &crc, key));
  if (file.empty() || file.find('/') != std::string::npos) {
    return Status::Error(ctx.where() + ": \"" + key + ".file\" must name a file beside model.json");
  }
  *path = dir + "/" + file;
  TELLER_RETURN_IF_ERROR(ReadWholeFile(*path, out));
  if (out->size() != bytes) {
    return Status::Error(*path + ": " + std::to_string(out->size()) + " bytes, model.json says " +
                         std::to_string(bytes) + " (damaged or from another model)");
  }
  if (Crc32c(out->data(), out->size()) != crc) {
    return Status::Error(*path +
                         ": checksum does not match model.json (damaged or from another model)");
  }
  return Status::Ok();
}

std::string ConfigJson(const ModelConfig& c) {
  std::string out;
  JsonObjectWriter w(out, JsonDoubles::kShortest);
  w.Field("network", NetworkName(c.variant))
      .Field("tpe_vocab", static_cast<uint64_t>(c.tpe_vocab))
      .Field("width", c.width)
      .Field("hidden", c.hidden)
      .Field("layers", c.layers)
      .Field("max_depth", c.max_depth)
      .Field("duration_scale", c.duration_scale);
  if (HasEvidenceHead(c)) w.FieldBool("evidence_head", c.evidence_head);
  if (ReadsText(c.variant)) {
    w.Field("text_vocab", static_cast<uint64_t>(c.text_vocab))
        .Field("mot_layers", c.mot_layers)
        .Field("heads", c.heads)
        .Field("max_ranks", c.max_ranks)
        .Field("max_log_tokens", c.max_log_tokens)
        .Field("max_explanation_tokens", c.max_explanation_tokens)
        .FieldBool("trace_stream", c.trace_stream)
        .FieldBool("log_stream", c.log_stream);
  }
  if (c.variant == Variant::kSingle) w.Field("max_trace_tokens", c.max_trace_tokens);
  w.Close();
  return out;
}

}  // namespace

Status Model::Save(const std::string& dir, const TrainedOn& trained_on) const {
  if (!impl_->network)
    return Status::Error("the model has no network (neither trained nor loaded)");
  TELLER_RETURN_IF_ERROR(MakeDirs(dir));
  Result<std::string> weights = impl_->network->SaveWeights();
  if (!weights.ok()) return weights.status();
  tpe::ModelMetadata meta;
  meta.requested_vocab_size = impl_->config.tpe_vocab;
  meta.data = trained_on.data;
  TELLER_RETURN_IF_ERROR(impl_->vocabulary.Save(dir + "/tpe", meta));
  TELLER_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kWeightsFile, *weights));
  const bool reads_text = ReadsText(impl_->config.variant);
  const std::string text = reads_text ? impl_->text.Serialize() : std::string();
  if (reads_text) TELLER_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kTextFile, text));
  std::string out;
  JsonObjectWriter w(out, JsonDoubles::kShortest);
  w.Field("format", kModelFormat).Field("version", kModelVersion);
  w.FieldRaw("config", ConfigJson(impl_->config));
  {
    w.Key("trained_on");
    JsonObjectWriter t(out, JsonDoubles::kShortest);
    t.Field("data", trained_on.data)
        .Field("split", trained_on.split)
        .Field("split_seed", trained_on.split_seed)
        .Field("units", trained_on.units);
    t.Close();
  }
  {
    w.Key("training");
    JsonObjectWriter t(out, JsonDoubles::kShortest);
    t.Field("samples", impl_->log.samples)
        .Field("steps", impl_->log.steps)
        .Field("parameters", impl_->log.parameters)
        .Field("seconds", impl_->log.seconds);
    t.Key("epoch_loss");
    JsonArrayWriter a(out, JsonDoubles::kShortest);
    for (double l : impl_->log.epoch_loss) a.Element(l);
    a.Close();
    t.Key("fault_classes");
    JsonArrayWriter f(out);
    for (int c : impl_->fault_classes) f.Element(static_cast<int64_t>(c));
    f.Close();
    t.Close();
  }
  {
    w.Key("weights");
    JsonObjectWriter t(out);
    t.Field("file", kWeightsFile)
        .Field("bytes", static_cast<uint64_t>(weights->size()))
        .Field("crc32c", static_cast<uint64_t>(Crc32c(weights->data(), weights->size())));
    t.Close();
  }
  if (reads_text) {
    w.Key("text");
    JsonObjectWriter t(out);
    t.Field("file", kTextFile)
        .Field("bytes", static_cast<uint64_t>(text.size()))
        .Field("crc32c", static_cast<uint64_t>(Crc32c(text.data(), text.size())));
    t.Close();
  }
  w.Close();
  out += '\n';
  // model.json last: a directory with it is complete.
  return WriteFileAtomic(dir + "/model.json", out);
}

Result<Model> Model::Load(const std::string& dir) {
  const std::string path = dir + "/model.json";
  Result<simdjson::padded_string> text = LoadJsonFile(path);
  if (!text.ok()) return text.status();
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (const auto e = parser.iterate(*text).get(doc)) {
    return Status::Error(path + ": not JSON (" + simdjson::error_message(e) + ")");
  }
  JsonContext ctx(path, std::string_view(text->data(), text->size()), doc);
  std::string format;
  TELLER_RETURN_IF_ERROR(ctx.Field(doc, "format", &format));
  if (format != kModelFormat) {
    return Status::Error(path + ": format \"" + format + "\", expected \"" + kModelFormat + "\"");
  }
  int64_t version = 0;
  TELLER_RETURN_IF_ERROR(ctx.Field(doc, "version", &version));
  if (version < 1 || version > kModelVersion) {
    return Status::Error(path + ": model version " + std::to_string(version) +
                         "; this Teller reads versions 1 to " + std::to_string(kModelVersion) +
                         " (train the model again)");
  }
  Model m;
  Impl& impl = *m.impl_;
  {
    simdjson::ondemand::object c;
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "config", &c));
    std::string network;
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "network", &network, "config"));
    // Version 1 knew the trace encoder only.
    if (network == NetworkName(Variant::kGcn)) {
      impl.config.variant = Variant::kGcn;
    } else if (network == NetworkName(Variant::kMot) && version >= 2) {
      impl.config.variant = Variant::kMot;
    } else if (network == NetworkName(Variant::kSingle) && version >= 2) {
      impl.config.variant = Variant::kSingle;
    } else {
      return Status::Error(path + ": unknown network \"" + network + "\" in a version " +
                           std::to_string(version) + " model");
    }
    int64_t width = 0, hidden = 0, layers = 0, max_depth = 0;
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "tpe_vocab", &impl.config.tpe_vocab, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "width", &width, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "hidden", &hidden, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "layers", &layers, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "max_depth", &max_depth, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "duration_scale", &impl.config.duration_scale, "config"));
    // Clamped into int before the range check, which then refuses anything clamped.
    auto narrow = [](int64_t v) {
      return static_cast<int>(std::clamp<int64_t>(v, -1, int64_t{1} << 30));
    };
    impl.config.width = narrow(width);
    impl.config.hidden = narrow(hidden);
    impl.config.layers = narrow(layers);
    impl.config.max_depth = narrow(max_depth);
    // Absent from models written before the evidence head: none (read once the streams
    // are known, below).
    impl.config.evidence_head = false;
    bool evidence_head = false, has_evidence_field = false;
    TELLER_RETURN_IF_ERROR(
        ctx.OptionalField(c, "evidence_head", &evidence_head, &has_evidence_field, "config"));
    if (ReadsText(impl.config.variant)) {
      int64_t mot_layers = 0, heads = 0, ranks = 0, log_tokens = 0, explanation_tokens = 0;
      TELLER_RETURN_IF_ERROR(ctx.Field(c, "text_vocab", &impl.config.text_vocab, "config"));
      TELLER_RETURN_IF_ERROR(ctx.Field(c, "mot_layers", &mot_layers, "config"));
      TELLER_RETURN_IF_ERROR(ctx.Field(c, "heads", &heads, "config"));
      TELLER_RETURN_IF_ERROR(ctx.Field(c, "max_ranks", &ranks, "config"));
      TELLER_RETURN_IF_ERROR(ctx.Field(c, "max_log_tokens", &log_tokens, "config"));
      TELLER_RETURN_IF_ERROR(ctx.Field(c, "max_explanation_tokens", &explanation_tokens, "config"));
      impl.config.mot_layers = narrow(mot_layers);
      impl.config.heads = narrow(heads);
      impl.config.max_ranks = narrow(ranks);
      impl.config.max_log_tokens = narrow(log_tokens);
      impl.config.max_explanation_tokens = narrow(explanation_tokens);
      // Absent from models written before the modality ablation: both streams.
      bool present = false;
      TELLER_RETURN_IF_ERROR(
          ctx.OptionalField(c, "trace_stream", &impl.config.trace_stream, &present, "config"));
      TELLER_RETURN_IF_ERROR(
          ctx.OptionalField(c, "log_stream", &impl.config.log_stream, &present, "config"));
    }
    if (impl.config.variant == Variant::kSingle) {
      int64_t trace_tokens = 0;
      TELLER_RETURN_IF_ERROR(ctx.Field(c, "max_trace_tokens", &trace_tokens, "config"));
      impl.config.max_trace_tokens = narrow(trace_tokens);
    }
    impl.config.evidence_head = has_evidence_field && evidence_head && HasEvidenceHead(impl.config);
    if (Status s = CheckConfig(impl.config); !s.ok()) {
      return Status::Error(path + ": " + s.message());
    }
  }
  {
    simdjson::ondemand::object t;
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "training", &t));
    TELLER_RETURN_IF_ERROR(ctx.Field(t, "samples", &impl.log.samples, "training"));
    TELLER_RETURN_IF_ERROR(ctx.Field(t, "steps", &impl.log.steps, "training"));
    TELLER_RETURN_IF_ERROR(ctx.Field(t, "parameters", &impl.log.parameters, "training"));
    TELLER_RETURN_IF_ERROR(ctx.Field(t, "seconds", &impl.log.seconds, "training"));
    simdjson::ondemand::array losses, faults;
    TELLER_RETURN_IF_ERROR(ctx.Field(t, "epoch_loss", &losses, "training"));
    for (auto v : losses) {
      double l = 0;
      if (v.get_double().get(l)) return ctx.Error("\"training.epoch_loss\": expected numbers");
      impl.log.epoch_loss.push_back(l);
    }
    TELLER_RETURN_IF_ERROR(ctx.Field(t, "fault_classes", &faults, "training"));
    for (auto v : faults) {
      int64_t c = 0;
      if (v.get_int64().get(c) || c < 0 || c >= kFaultCategoryCount) {
        return ctx.Error("\"training.fault_classes\": expected fault categories 0.." +
                         std::to_string(kFaultCategoryCount - 1));
      }
      impl.fault_classes.push_back(static_cast<int>(c));
    }
  }
  std::string weights_path, weights;
  TELLER_RETURN_IF_ERROR(ReadCheckedFile(ctx, doc, "weights", dir, &weights_path, &weights));
  if (ReadsText(impl.config.variant)) {
    std::string text_path, text;
    TELLER_RETURN_IF_ERROR(ReadCheckedFile(ctx, doc, "text", dir, &text_path, &text));
    Result<TextVocabulary> words = TextVocabulary::Parse(text, text_path);
    if (!words.ok()) return words.status();
    impl.text = std::move(words).value();
    if (impl.text.size() > impl.config.text_vocab) {
      return Status::Error(text_path + ": " + std::to_string(impl.text.size()) +
                           " tokens, more than the config's text_vocab");
    }
  }
  Result<tpe::Model> vocab = tpe::Model::Load(dir + "/tpe");
  if (!vocab.ok()) return vocab.status();
  impl.vocabulary = std::move(vocab).value();
  auto net = internal::MakeNetwork(impl.config, impl.vocabulary.size(),
                                   static_cast<uint32_t>(impl.text.size()), 0);
  if (!net.ok()) return net.status();
  impl.network = std::move(net).value();
  if (Status s = impl.network->LoadWeights(weights); !s.ok()) {
    return Status::Error(weights_path + ": " + s.message());
  }
  return m;
}

}  // namespace teller::rca
