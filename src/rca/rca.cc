// The learned stage's model: training, prediction and the model directory
// (include/teller/rca/rca.h). Torch-free; the network is behind src/rca/network.h.
#include "teller/rca/rca.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "src/rca/encode.h"
#include "src/rca/network.h"
#include "teller/core/crc32c.h"
#include "teller/core/file_util.h"
#include "teller/core/json_reader.h"
#include "teller/core/json_writer.h"
#include "teller/tpe/model.h"

namespace teller::rca {

using internal::EncodedStep;

struct Model::Impl {
  ModelConfig config;
  tpe::Model vocabulary;
  std::unique_ptr<internal::Network> network;
  TrainingLog log;
  std::vector<int> fault_classes;
};

bool Available() { return internal::TorchAvailable(); }

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
  Model m;
  Impl& impl = *m.impl_;
  impl.config = options.config;
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
  auto net = internal::MakeNetwork(impl.config, impl.vocabulary.size(), options.seed);
  if (!net.ok()) return net.status();
  impl.network = std::move(net).value();

  std::vector<const EncodedStep*> x;
  std::vector<internal::Target> y;
  std::set<int> faults;
  for (const Sample& s : train) {
    x.push_back(&(*encoded)[s.step]);
    internal::Target t;
    for (int v = 0; v < kViewsCount; ++v) t.abnormal[v] = s.abnormal[v] ? 1.0f : 0.0f;
    if (s.fault >= 0 && s.fault < kFaultCategoryCount) {
      t.fault = s.fault;
      faults.insert(s.fault);
    }
    y.push_back(t);
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
  if (!impl_->network)
    return Status::Error("the model has no network (neither trained nor loaded)");
  if (steps.empty()) return std::vector<StepOutput>{};
  Result<std::vector<EncodedStep>> encoded =
      internal::EncodeCorpus(corpus, impl_->vocabulary, impl_->config, steps);
  if (!encoded.ok()) return encoded.status();
  std::vector<const EncodedStep*> x;
  for (uint32_t s : steps) x.push_back(&(*encoded)[s]);
  return impl_->network->Predict(x);
}

namespace {

constexpr const char* kModelFormat = "teller-rca-model";
constexpr const char* kWeightsFile = "weights.pt";

Status ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot read (" + std::strerror(errno) + ")");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::Error(path + ": read error");
  *out = std::move(buffer).str();
  return Status::Ok();
}

std::string ConfigJson(const ModelConfig& c) {
  std::string out;
  JsonObjectWriter w(out, JsonDoubles::kShortest);
  w.Field("network", "trace-encoder-gcn")
      .Field("tpe_vocab", static_cast<uint64_t>(c.tpe_vocab))
      .Field("width", c.width)
      .Field("hidden", c.hidden)
      .Field("layers", c.layers)
      .Field("max_depth", c.max_depth)
      .Field("duration_scale", c.duration_scale);
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
  if (version != kModelVersion) {
    return Status::Error(path + ": model version " + std::to_string(version) +
                         "; this Teller reads version " + std::to_string(kModelVersion) +
                         " (train the model again)");
  }
  Model m;
  Impl& impl = *m.impl_;
  {
    simdjson::ondemand::object c;
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "config", &c));
    std::string network;
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "network", &network, "config"));
    if (network != "trace-encoder-gcn") {
      return Status::Error(path + ": unknown network \"" + network + "\"");
    }
    int64_t width = 0, hidden = 0, layers = 0, max_depth = 0;
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "tpe_vocab", &impl.config.tpe_vocab, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "width", &width, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "hidden", &hidden, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "layers", &layers, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "max_depth", &max_depth, "config"));
    TELLER_RETURN_IF_ERROR(ctx.Field(c, "duration_scale", &impl.config.duration_scale, "config"));
    if (width < 1 || width > 4096 || hidden < 1 || hidden > 4096 || layers < 0 || layers > 64 ||
        max_depth < 1 || max_depth > 65536) {
      return Status::Error(path + ": config out of range");
    }
    impl.config.width = static_cast<int>(width);
    impl.config.hidden = static_cast<int>(hidden);
    impl.config.layers = static_cast<int>(layers);
    impl.config.max_depth = static_cast<int>(max_depth);
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
  std::string file;
  uint64_t bytes = 0, crc = 0;
  {
    simdjson::ondemand::object w;
    TELLER_RETURN_IF_ERROR(ctx.Field(doc, "weights", &w));
    TELLER_RETURN_IF_ERROR(ctx.Field(w, "file", &file, "weights"));
    TELLER_RETURN_IF_ERROR(ctx.Field(w, "bytes", &bytes, "weights"));
    TELLER_RETURN_IF_ERROR(ctx.Field(w, "crc32c", &crc, "weights"));
  }
  if (file.empty() || file.find('/') != std::string::npos) {
    return Status::Error(path + ": \"weights.file\" must name a file beside model.json");
  }
  Result<tpe::Model> vocab = tpe::Model::Load(dir + "/tpe");
  if (!vocab.ok()) return vocab.status();
  impl.vocabulary = std::move(vocab).value();
  const std::string weights_path = dir + "/" + file;
  std::string weights;
  TELLER_RETURN_IF_ERROR(ReadWholeFile(weights_path, &weights));
  if (weights.size() != bytes) {
    return Status::Error(weights_path + ": " + std::to_string(weights.size()) +
                         " bytes, model.json says " + std::to_string(bytes) +
                         " (damaged or from another model)");
  }
  if (Crc32c(weights.data(), weights.size()) != crc) {
    return Status::Error(weights_path +
                         ": checksum does not match model.json (damaged or from another model)");
  }
  auto net = internal::MakeNetwork(impl.config, impl.vocabulary.size(), 0);
  if (!net.ok()) return net.status();
  impl.network = std::move(net).value();
  if (Status s = impl.network->LoadWeights(weights); !s.ok()) {
    return Status::Error(weights_path + ": " + s.message());
  }
  return m;
}

}  // namespace teller::rca
