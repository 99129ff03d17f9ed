// Canonical operator signatures (EventTable::signature, docs/signature.md): what a trace
// records of a call's size, written as one compact string. Every importer fills a
// SignatureFields from its own input and calls AppendSignature, so that one call gives
// the same text whatever format it came from: fields in one fixed order, numbers in
// plain decimal, no whitespace but the single space between fields.
#ifndef TELLER_INGEST_SIGNATURE_H_
#define TELLER_INGEST_SIGNATURE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace teller::ingest {

struct SignatureFields {
  // Collective: "Collective name", "In msg nelems", "Out msg nelems", "Group size",
  // "dtype" (Kineto record_param_comms and NCCL kernel args). Empty / false = absent.
  std::string_view coll;
  bool has_in = false;
  bool has_out = false;
  bool has_group = false;
  uint64_t in = 0;
  uint64_t out = 0;
  uint64_t group = 0;
  std::string_view dtype;
  // Host operators: the JSON text of "Input Dims" (whitespace is dropped), and the
  // "Input type" list already written as `[` TYPE *("," TYPE) `]` (AppendTypeElement).
  std::string_view dims;
  std::string_view types;
  // Kernels: launch geometry and shared memory per block (static + dynamic bytes).
  bool has_grid = false;
  uint64_t grid[3] = {0, 0, 0};
  uint64_t block[3] = {0, 0, 0};
  uint64_t smem = 0;  // written only when > 0: "none" and "0 bytes" cost the same
  // Copies: the copy kind, when the event's name does not already say it.
  std::string_view copy;

  bool empty() const {
    return coll.empty() && !has_in && !has_out && !has_group && dims.empty() && types.empty() &&
           !has_grid && copy.empty();
  }
};

// Appends the signature of `f` to `out` (nothing when f.empty()).
void AppendSignature(const SignatureFields& f, std::string& out);

// Appends one element of a types list, escaping what the list syntax reserves. The caller
// writes the brackets and the commas between elements.
void AppendTypeElement(std::string_view text, std::string& out);

// Appends a JSON array's text without the whitespace outside strings: "[[8, 4096], []]"
// -> "[[8,4096],[]]".
void AppendCompactJson(std::string_view json, std::string& out);

// Appends the JSON text of an array of strings (Kineto "Input type") as a types list,
// `[` TYPE *("," TYPE) `]`, each string unescaped (\uXXXX to UTF-8) and then escaped for
// the list. Returns false, leaving `out` as it was, when `json` is not an array of
// strings only.
bool AppendTypeList(std::string_view json, std::string& out);

// The token of a CUpti_ActivityMemcpyKind ("HtoD", "DtoH", ..., "PtoP"), as Kineto and
// CUPTI write it in copy names; empty for unknown kinds.
std::string_view CopyKindToken(uint32_t kind);

// True when `name` already says the copy kind `token` (Kineto's "Memcpy HtoD (Host ->
// Device)"), so that the signature need not repeat it.
bool NameCarriesCopyKind(std::string_view name, std::string_view token);

}  // namespace teller::ingest

#endif  // TELLER_INGEST_SIGNATURE_H_
