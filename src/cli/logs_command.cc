// `teller logs mine`: log template mining over log files (docs/logs.md), with templates
// saved to a file and reused, so that a baseline's templates give an incident's lines
// their ids and the new kinds of lines stand out.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/ingest/ingest.h"
#include "teller/logs/template_miner.h"

namespace teller::cli {
namespace {

constexpr const char* kHelp =
    "usage: teller logs mine LOGFILE... [--templates FILE] [--out FILE] [--top N]\n"
    "                        [--similarity X] [--depth N]\n"
    "\n"
    "Mines the templates of log messages (the constant text, with numbers, ids, paths,\n"
    "addresses and other variable parts as <*>) and lists them by the number of lines of\n"
    "these files, most frequent first. Messages are the lines without time, level and\n"
    "process prefixes, as the log importer reads them (docs/ingest-logs.md); .log.gz too.\n"
    "\n"
    "  --templates FILE  start from the templates of FILE (written by --out, e.g. from a\n"
    "                    healthy run): lines that fit them keep their ids, new templates\n"
    "                    get the next ids and are marked 'new'\n"
    "  --out FILE        write all templates (those of --templates included) to FILE\n"
    "  --top N           templates listed (default 30; 0 = all)\n"
    "  --similarity X    share of equal tokens a line needs to join a template, in\n"
    "                    [0, 1] (default 0.7; with --templates, the file's)\n"
    "  --depth N         leading tokens the tree routes by, plus 2 (default 4)\n"
    "\n"
    "Exit status: 0 done, 1 error (unreadable log or template file), 2 usage.\n";

}  // namespace

int LogsCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kHelp, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] != "mine") {
    std::fprintf(stderr, "teller logs: unknown subcommand '%s'\n\n%s", args[0].c_str(), kHelp);
    return 2;
  }
  std::vector<std::string> files;
  std::string templates, out;
  size_t top = 30;
  logs::MinerOptions options;
  bool options_given = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "teller logs mine: %s needs a value\n", a.c_str());
        return false;
      }
      *v = args[++i];
      return true;
    };
    std::string v;
    char* end = nullptr;
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--templates") {
      if (!value(&templates)) return 2;
    } else if (a == "--out") {
      if (!value(&out)) return 2;
    } else if (a == "--top" || a == "--depth") {
      if (!value(&v)) return 2;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < 0 || n > 1000000) {
        std::fprintf(stderr, "teller logs mine: %s expects a whole number, got '%s'\n", a.c_str(),
                     v.c_str());
        return 2;
      }
      if (a == "--top") {
        top = static_cast<size_t>(n);
      } else {
        options.depth = static_cast<int>(n);
        options_given = true;
      }
    } else if (a == "--similarity") {
      if (!value(&v)) return 2;
      options.similarity = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0') {
        std::fprintf(stderr, "teller logs mine: --similarity expects a number, got '%s'\n",
                     v.c_str());
        return 2;
      }
      options_given = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "teller logs mine: unknown option '%s'\n\n%s", a.c_str(), kHelp);
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "teller logs mine: give at least one LOGFILE\n\n%s", kHelp);
    return 2;
  }
  if (Status st = logs::ValidateOptions(options); !st.ok()) {
    std::fprintf(stderr, "teller logs mine: %s\n", st.message().c_str());
    return 2;
  }
  if (options_given && !templates.empty()) {
    std::fprintf(stderr,
                 "teller logs mine: --similarity and --depth come from the --templates file "
                 "when one is given\n");
    return 2;
  }
  logs::TemplateMiner miner(options);
  size_t known = 0;
  if (!templates.empty()) {
    auto loaded = logs::TemplateMiner::Load(templates);
    if (!loaded.ok()) {
      std::fprintf(stderr, "teller logs mine: %s\n", loaded.status().message().c_str());
      return 1;
    }
    miner = std::move(loaded).value();
    known = miner.size();
  }
  Trace trace;
  for (const std::string& f : files) {
    if (Status st = ingest::ImportLogFile(f, {}, trace); !st.ok()) {
      std::fprintf(stderr, "teller logs mine: %s\n", st.message().c_str());
      return 1;
    }
  }
  std::vector<uint64_t> lines;  // of these files, by template id
  for (size_t row = 0; row < trace.logs.size(); ++row) {
    const logs::TemplateId id = miner.Add(trace.strings.Get(trace.logs.message[row]));
    if (id >= lines.size()) lines.resize(id + 1, 0);
    ++lines[id];
  }
  lines.resize(miner.size(), 0);
  std::vector<logs::TemplateId> order;
  size_t fresh = 0, seen = 0;
  for (logs::TemplateId id = 0; id < lines.size(); ++id) {
    if (lines[id] == 0) continue;
    order.push_back(id);
    fresh += id >= known;
    seen += id < known;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](logs::TemplateId a, logs::TemplateId b) { return lines[a] > lines[b]; });
  std::printf("%zu lines of %zu %s: %zu templates", trace.logs.size(), files.size(),
              files.size() == 1 ? "file" : "files", order.size());
  if (!templates.empty()) {
    std::printf(" (%zu new, %zu of the %zu in %s)", fresh, seen, known, templates.c_str());
  }
  std::printf("\n");
  if (!order.empty()) std::printf("%7s %9s  %s\n", "id", "lines", "template");
  for (size_t k = 0; k < order.size() && (top == 0 || k < top); ++k) {
    const logs::TemplateId id = order[k];
    std::printf("%7u %9llu  %s%s\n", id, static_cast<unsigned long long>(lines[id]),
                id >= known && known > 0 ? "[new] " : "", miner.Text(id).c_str());
  }
  if (top != 0 && order.size() > top) {
    std::printf("... %zu more templates (--top 0 lists all)\n", order.size() - top);
  }
  // The importer's counters: what it left out or could not read (empty lines, cut lines,
  // lines without a time, ...).
  for (const CounterEntry& c : trace.counters.entries()) {
    if (c.value != 0) {
      std::printf("counter %.*s = %llu\n", static_cast<int>(c.name.size()), c.name.data(),
                  static_cast<unsigned long long>(c.value));
    }
  }
  if (!out.empty()) {
    if (Status st = miner.Save(out); !st.ok()) {
      std::fprintf(stderr, "teller logs mine: %s\n", st.message().c_str());
      return 1;
    }
    std::printf("templates written to %s\n", out.c_str());
  }
  return 0;
}

}  // namespace teller::cli
