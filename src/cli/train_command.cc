// `teller train`: trains a learned model (src/rca, docs/rca.md: the trace encoder, the MoT
// or the single stream) on a labelled dataset and writes a model directory.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/eval/dataset.h"
#include "teller/eval/evaluate.h"
#include "teller/eval/methods.h"
#include "teller/rca/rca.h"

namespace teller::cli {
namespace {

constexpr const char* kTrainHelp =
    "usage: teller train --data DIR --out MODEL [--variant gcn|mot|single] [--epochs E]\n"
    "                    [--seed S] [--split all|incident|request] [--vocab N] [--width W]\n"
    "                    [--layers L] [-q]\n"
    "\n"
    "Trains a learned model (docs/rca.md). gcn: the trace encoder, TPE tokens of every step,\n"
    "graph convolution over the call tree, a head for \"step abnormal\" per view and one for\n"
    "the fault type. mot: the same encoder as the trace stream of a mixture of transformers\n"
    "that also reads the unit's log lines and generates the explanation. single: one causal\n"
    "transformer over the step's TPE tokens and log words in one sequence, generating its\n"
    "verdicts, <fault_type> y </fault_type> and the explanation. DIR is a labelled dataset\n"
    "from `teller dataset build`. Writes MODEL/model.json, MODEL/weights.pt, MODEL/tpe/ (the\n"
    "TPE vocabulary it reads) and, for mot and single, MODEL/text.json (its words).\n"
    "\n"
    "options:\n"
    "  --data DIR      labelled dataset\n"
    "  --out MODEL     model directory (created)\n"
    "  --variant V     gcn (default), mot or single\n"
    "  --epochs E      passes over the training units (default 30)\n"
    "  --seed S        model (and split) seed (default 1)\n"
    "  --split NAME    all (default): every unit; incident or request: only the training\n"
    "                  part of that split of `teller eval` with the same seed, so that its\n"
    "                  test part stays unseen\n"
    "  --vocab N       TPE vocabulary size (default 256)\n"
    "  --width W       backbone width (default 64)\n"
    "  --layers L      graph-convolution layers (default 2)\n"
    "  -q              no progress lines\n";

bool WholeNumber(const std::string& text, uint64_t max, uint64_t* out) {
  if (text.empty() || text[0] == '-') return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

int ModelTrainCommand(const std::vector<std::string>& args) {
  std::string data, out, split = "all", variant_text = "gcn";
  uint64_t epochs = 30, seed = 1, vocab = 256, width = 64, layers = 2;
  bool quiet = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller train: %s needs a value\n", a.c_str());
        return false;
      }
      *v = args[++i];
      return true;
    };
    auto number = [&](uint64_t min, uint64_t max, uint64_t* v) {
      std::string text;
      if (!value(&text)) return false;
      if (!WholeNumber(text, max, v) || *v < min) {
        std::fprintf(stderr, "teller train: %s expects a whole number in [%llu, %llu], got '%s'\n",
                     a.c_str(), static_cast<unsigned long long>(min),
                     static_cast<unsigned long long>(max), text.c_str());
        return false;
      }
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kTrainHelp, stdout);
      return 0;
    } else if (a == "--data") {
      if (!value(&data)) return 2;
    } else if (a == "--out") {
      if (!value(&out)) return 2;
    } else if (a == "--split") {
      if (!value(&split)) return 2;
    } else if (a == "--variant") {
      if (!value(&variant_text)) return 2;
    } else if (a == "--epochs") {
      if (!number(1, 100000, &epochs)) return 2;
    } else if (a == "--seed") {
      if (!number(0, UINT64_MAX, &seed)) return 2;
    } else if (a == "--vocab") {
      if (!number(16, 1 << 20, &vocab)) return 2;
    } else if (a == "--width") {
      if (!number(1, 4096, &width)) return 2;
    } else if (a == "--layers") {
      if (!number(0, 64, &layers)) return 2;
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else {
      std::fprintf(stderr, "teller train: unknown argument '%s'\n\n%s", a.c_str(), kTrainHelp);
      return 2;
    }
  }
  if (data.empty() || out.empty()) {
    std::fprintf(stderr, "teller train: give --data DIR and --out MODEL\n\n%s", kTrainHelp);
    return 2;
  }
  if (split != "all" && split != "incident" && split != "request") {
    std::fprintf(stderr,
                 "teller train: --split is all, incident or request (engine and run splits have "
                 "a fold per held-out group: `teller eval --method teller-gcn` trains one per "
                 "fold), got '%s'\n",
                 split.c_str());
    return 2;
  }
  rca::Variant variant = rca::Variant::kGcn;
  if (!rca::ParseVariant(variant_text, &variant)) {
    std::fprintf(stderr, "teller train: --variant is gcn, mot or single, got '%s'\n",
                 variant_text.c_str());
    return 2;
  }
  const bool reads_text = rca::ReadsText(variant);  // reads logs, writes explanations
  if (!rca::Available()) {
    std::fprintf(stderr,
                 "teller train: this build of Teller has no libtorch (apt-get install libtorch-dev "
                 "libopenblas0-pthread, then re-run cmake)\n");
    return 1;
  }
  eval::LoadOptions load;
  load.explanations = reads_text;  // the MoT and the single stream learn to generate them
  auto ds = eval::LoadDataset(data, load);
  if (!ds.ok()) {
    std::fprintf(stderr, "teller train: %s\n", ds.status().message().c_str());
    return 1;
  }
  std::vector<uint32_t> units;
  if (split == "all") {
    for (uint32_t i = 0; i < ds->units.size(); ++i) units.push_back(i);
  } else {
    auto kind = eval::ParseSplit(split);
    if (!kind.ok()) {
      std::fprintf(stderr, "teller train: %s\n", kind.status().message().c_str());
      return 2;
    }
    auto folds = eval::MakeFolds(*ds, *kind, seed);
    if (!folds.ok() || folds->empty()) {
      std::fprintf(stderr, "teller train: %s\n",
                   folds.ok() ? "the split has no fold" : folds.status().message().c_str());
      return 1;
    }
    units = folds->front().train;
  }
  const eval::GcnInput input = eval::MakeGcnInput(*ds);
  rca::TrainOptions options;
  options.epochs = static_cast<int>(epochs);
  options.seed = seed;
  options.config.tpe_vocab = static_cast<uint32_t>(vocab);
  options.config.width = static_cast<int>(width);
  options.config.layers = static_cast<int>(layers);
  options.config.variant = variant;
  if (!quiet) {
    options.progress = [](std::string_view line) {
      std::fprintf(stderr, "teller train: %.*s\n", static_cast<int>(line.size()), line.data());
    };
    std::fprintf(stderr, "teller train: %s, %zu units (%s), %zu step records\n",
                 rca::VariantName(variant), units.size(), split.c_str(), input.corpus.steps.size());
  }
  auto model = rca::Model::Train(input.corpus, input.Samples(*ds, units, reads_text), options);
  if (!model.ok()) {
    std::fprintf(stderr, "teller train: %s\n", model.status().message().c_str());
    return 1;
  }
  rca::TrainedOn on;
  on.data = std::filesystem::absolute(data).lexically_normal().string();
  on.split = split;
  on.split_seed = seed;
  on.units = units.size();
  if (Status s = model->Save(out, on); !s.ok()) {
    std::fprintf(stderr, "teller train: %s\n", s.message().c_str());
    return 1;
  }
  // Inference cost on this dataset: encoding (TPE) and the forward pass of every record (the
  // MoT: of every unit, with its log lines and the generated explanation).
  std::vector<uint32_t> all;
  std::vector<std::vector<std::string>> lines;
  std::vector<rca::Query> queries;
  if (reads_text) {
    // On the first 256 units: greedy decoding makes a text model's pass per unit far dearer than
    // the trace encoder's, and the rate is what is wanted.
    const auto n = static_cast<uint32_t>(std::min<size_t>(ds->units.size(), 256));
    lines.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      lines[i] = eval::UnitLogLines(*ds, i);
      queries.push_back({input.StepOf(*ds, i), &lines[i]});
    }
  } else {
    for (uint32_t k = 0; k < input.corpus.steps.size(); ++k) queries.push_back({k, nullptr});
  }
  all.resize(queries.size());
  const auto t0 = std::chrono::steady_clock::now();
  auto outputs = model->Predict(input.corpus, queries);
  const double infer_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!outputs.ok()) {
    std::fprintf(stderr, "teller train: %s\n", outputs.status().message().c_str());
    return 1;
  }
  const rca::TrainingLog& log = model->training();
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(out + "/weights.pt", ec);
  std::printf(
      "model %s: %llu parameters (weights %.1f KiB), %llu units on %llu step records, "
      "%zu epochs in %.1f s, loss %.4f -> %.4f; inference %.2f ms per %s\n",
      out.c_str(), static_cast<unsigned long long>(log.parameters),
      ec ? 0.0 : static_cast<double>(bytes) / 1024.0, static_cast<unsigned long long>(log.samples),
      static_cast<unsigned long long>(log.steps), log.epoch_loss.size(), log.seconds,
      log.epoch_loss.front(), log.epoch_loss.back(),
      all.empty() ? 0.0 : 1e3 * infer_s / static_cast<double>(all.size()),
      reads_text ? "unit" : "step record");
  return 0;
}

}  // namespace teller::cli
