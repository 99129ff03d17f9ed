// From step records to what the network reads (docs/rca.md, "Input"): TPE symbols of the
// nodes, a TPE vocabulary trained on the training steps, the encoded token sequences and
// their duration channels. Torch-free. Private to src/rca.
#ifndef TELLER_SRC_RCA_ENCODE_H_
#define TELLER_SRC_RCA_ENCODE_H_

#include <cstdint>
#include <vector>

#include "src/rca/network.h"
#include "teller/core/status.h"
#include "teller/rca/rca.h"
#include "teller/tpe/model.h"

namespace teller::rca::internal {

// A TPE vocabulary of at most `vocab` tokens trained on the distinct steps in `steps`
// (indices into corpus.steps). Error: a vocabulary below the base alphabet (named).
Result<tpe::Model> TrainVocabulary(const Corpus& corpus, const std::vector<uint32_t>& steps,
                                   uint32_t vocab);

// Every step of `corpus` encoded with `model` (steps of settings no entry of `wanted`
// belongs to are left empty: the relative durations need the whole setting, nothing else).
Result<std::vector<EncodedStep>> EncodeCorpus(const Corpus& corpus, const tpe::Model& model,
                                              const ModelConfig& config,
                                              const std::vector<uint32_t>& wanted);

}  // namespace teller::rca::internal

#endif  // TELLER_SRC_RCA_ENCODE_H_
