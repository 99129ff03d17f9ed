// Trace Pair Encoding end to end (docs/method.md §5; docs/tpe.md): train a model on a dataset's
// steps, encode steps with it, and measure compression (the paper's Table 6). What
// `teller tpe train|encode|stats` run; the pieces are in symbols.h, sequence.h, corpus.h,
// trainer.h and model.h.
#ifndef TELLER_TPE_TPE_H_
#define TELLER_TPE_TPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "teller/core/status.h"
#include "teller/tpe/corpus.h"
#include "teller/tpe/model.h"
#include "teller/tpe/trainer.h"

namespace teller::tpe {

struct Trained {
  Model model;
  TrainResult result;
  ModelMetadata metadata;  // for Model::Save
};

// Trains on every step of `corpus`: base alphabet from its symbols (Model::BaseAlphabet),
// then TrainMerges. `data` is recorded in the metadata. Errors as TrainMerges (a
// vocabulary smaller than the base alphabet names both sizes).
Result<Trained> TrainOnCorpus(const Corpus& corpus, const TrainOptions& options,
                              const std::string& data);

// Model ids for every node of `corpus` (unseen symbols -> their bare type-tag token).
std::vector<TokenId> ModelIds(const Corpus& corpus, const Model& model);

// Step k serialized with `ids` (from ModelIds) and encoded; `node` holds the step
// record's node ids.
Sequence EncodeStep(const Corpus& corpus, const std::vector<TokenId>& ids, const Model& model,
                    size_t k);

// One JSON line (with '\n') for an encoded step: setting, request, step, seq, is_anomaly,
// nodes, input_ids, parent_idx, duration, depth, spans ([first, last] positions of the
// serialized step; equal to node ids unless "node_ids" is present).
void AppendEncodedStepJson(std::string& out, const Corpus& corpus, size_t k, const Sequence& seq);

// Table 6 of the paper: per vocabulary size, events per step before and after TPE.
struct StatsRow {
  uint32_t vocab = 0;
  double events_before = 0, events_after = 0;
  double compression = 0;      // before / after
  double reduction = 0;        // 1 - after / before, a fraction
  uint32_t vocab_reached = 0;  // < vocab when training ran out of pairs to merge
};

// Trains once to the largest size (a smaller vocabulary's merges are a prefix of a larger
// one's) and reads every row off the token counts. Sizes below the base alphabet are an
// error naming it.
Result<std::vector<StatsRow>> CompressionStats(const Corpus& corpus,
                                               const std::vector<uint32_t>& vocab_sizes,
                                               const TrainOptions& options);
// {"rows":[{"vocab","events_before","events_after","compression","reduction"}]}
std::string StatsJson(const std::vector<StatsRow>& rows);
// The same as an aligned text table (compression as "6.20x", reduction as "83.88%").
std::string StatsTable(const std::vector<StatsRow>& rows);

}  // namespace teller::tpe

#endif  // TELLER_TPE_TPE_H_
