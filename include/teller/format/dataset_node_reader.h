// Reading the dataset's node schema back (dataset_node.h, docs/dataset-format.md): the node
// objects of trace.json and the node columns of steps.jsonl. Every reader of those files
// (the evaluation, the tests) goes through these, so they check the schema one way.
#ifndef TELLER_FORMAT_DATASET_NODE_READER_H_
#define TELLER_FORMAT_DATASET_NODE_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "simdjson.h"
#include "teller/core/json_reader.h"
#include "teller/core/status.h"
#include "teller/format/dataset_node.h"

namespace teller::format {

// Reads one node object of trace.json as AppendDatasetNode writes it: `name` receives the
// unescaped name (node->name_json is left empty); has_rank says whether the node carried
// a rank. `what` labels the node in errors ("steps[3].nodes[7]"), which name the field
// and, through `ctx`, the file and byte offset.
Status ReadDatasetNode(const JsonContext& ctx, simdjson::ondemand::value& value,
                       std::string_view what, DatasetNode* node, std::string* name);

// Which columns a reader wants; the others are skipped unparsed (the depth column is
// derivable from the parents, and not every reader needs it).
struct DatasetColumnsWanted {
  bool depth = true;
};

// Reads the columns of one steps.jsonl line, whose other fields the caller reads: `n` and
// every wanted column must be there, hold n integers each in range, parents must precede
// their nodes (-1 for a root) and names must index names.json (`names` entries). Errors
// through `ctx` name the column and node.
Status ReadDatasetColumns(const JsonContext& ctx, simdjson::ondemand::document& line, size_t names,
                          DatasetColumns* out, const DatasetColumnsWanted& wanted = {});

}  // namespace teller::format

#endif  // TELLER_FORMAT_DATASET_NODE_READER_H_
