// TPE symbols (docs/method.md §5): one symbol per call-tree node, "<type tag> <normalized name>",
// e.g. "[K] flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<#, #, #, #, ...>, ...>".
//
// The type tags are the classes of the `type` column of steps.jsonl (src/dataset,
// docs/dataset-format.md); the numbering is that file's and must stay in step with it.
// Names are normalized so that a symbol names an operator, not one call of it: values that
// change from call to call (step numbers, token counts, request ids, addresses, sizes,
// layer indices) are replaced, while everything that selects different code (identifiers,
// types, boolean and enum template arguments) is kept. The exact rule is documented at
// NormalizeName() and in docs/tpe.md; kNormalizationVersion changes whenever it does, and
// a model records the version it was trained with.
#ifndef TELLER_TPE_SYMBOLS_H_
#define TELLER_TPE_SYMBOLS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "teller/format/dataset_node.h"

namespace teller::tpe {

// Type tags, as numbered in steps.jsonl's `type` column.
using format::kNumTypeTags;
using format::TypeTag;

// "[STEP]", "[FE]", "[BE]", "[COMM]", "[RT]", "[DRV]", "[K]", "[MEM]", "[SYNC]", "[MARK]",
// "[GANN]". These bare tags are also vocabulary entries: the encoder maps a name it has
// never seen to the tag of its type, so an unseen kernel still reads as "some kernel".
std::string_view TypeTagText(TypeTag tag);

// Version of the normalization rule below; stored in a model's metadata.json.
inline constexpr int kNormalizationVersion = 1;

// The normalized form of a node name (rule v1), applied in this order:
//  1. Kernels ([K]) only: a leading "void " return type and the trailing parameter list
//     "(...)" of a demangled name are dropped. The parameters follow from the function and
//     its template arguments and only make names long. "(anonymous namespace)" inside
//     the qualified name is not a parameter list and stays.
//  2. key=value words ("teller.step seq=12 kind=decode reqs=a,b"): a value that is an
//     identifier (starts with a letter or '_', then letters, digits, '_', '.', ':') is
//     kept: kind=decode, cls=Qwen2DecoderLayer, op=send. Any other value (numbers, request
//     ids, lists, and identifiers that rule 4 would turn into "#" as a whole, like the hex
//     id bbdd357ca43cec34) becomes "*": seq=*, reqs=*; so does any value of a key naming
//     requests (req, reqs, request, requests, rid, rids, request_id, request_ids), since
//     request ids change every step whatever they look like.
//  3. Hex addresses 0x1f2e... become "#".
//  4. Id-like words: a run of [A-Za-z0-9] that is all hex digits with at least one digit,
//     or a '-'-joined chain of such runs (a UUID), with 8 or more characters in all and not
//     joined to an identifier by '_', becomes "#" (chatcmpl-e2a4da5ae432f354-50da846f ->
//     chatcmpl-#). Identifiers such as bf16bf16_bf16f32 are joined by '_' and stay.
//  5. Numbers that stand alone (not preceded by a letter, digit, '_' or ')', not
//     followed by a letter, digit or '_'), with a fraction and integer suffixes (u, l)
//     included, become "#": model.layers.17 -> model.layers.#, [4, 4096] -> [#, #],
//     Kernel<128, 4, false> -> Kernel<#, #, false>, storage<4096ul> -> storage<#>.
//     Kept: digits inside identifiers (Qwen2, sm90, bf16, tilesize128x128x64: cuBLAS
//     encodes its algorithm choice in the name, and a different algorithm is a different
//     kernel), lambda ordinals "{lambda()#3}" (a number after ")#": a different lambda is
//     different code) and enum casts "(flashinfer::MaskMode)1" (an enum argument selects
//     a code path).
// So one kernel instantiated with different numeric template arguments (tile sizes,
// vector widths, rank counts: tuning constants of one algorithm) is one symbol, while
// different types, booleans or enums (dtype, causal/non-causal, KV-cache dtype) give
// different symbols.
std::string NormalizeName(TypeTag tag, std::string_view name);

// "<tag text> <normalized name>", or the bare tag text when the name is empty.
std::string SymbolText(TypeTag tag, std::string_view normalized_name);

}  // namespace teller::tpe

#endif  // TELLER_TPE_SYMBOLS_H_
