// Template mining (docs/logs.md): masking, the tree and its merges, template files, and
// grouping accuracy, with expectations worked out by hand from the rules in
// include/teller/logs/template_miner.h.
#include "teller/logs/template_miner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace teller::logs {
namespace {

std::string Masked(std::string_view m) {
  std::string out;
  MaskMessage(m, &out);
  return out;
}

TEST(MaskMessageTest, MasksNumbersIdsPathsHexAndAddresses) {
  EXPECT_EQ(Masked("PacketResponder 1 for block blk_-6952295868487656571 terminating"),
            "PacketResponder <*> for block blk_-<*> terminating");
  // An IP with its port, a host with its port, an IP alone: one wildcard each.
  EXPECT_EQ(Masked("from 10.0.0.7:5070 via proxy.cse.cuhk.edu.hk:5070 to 192.168.1.20"),
            "from <*> via <*> to <*>");
  EXPECT_EQ(Masked("port=11 route = 0x0 (0x1f)"), "port=<*> route = <*> (<*>)");
  // A uuid, its all-letter "bdcc" group included, then the closing bracket.
  EXPECT_EQ(Masked("[instance: d96a117b-0193-4549-bdcc-63b917273d1d] Terminating"),
            "[instance: <*>] Terminating");
  EXPECT_EQ(Masked("open /var/lib/nova/instances/_base and ./rel/path, ~/x, s3://bucket/key"),
            "open <*> and <*> <*> <*>");
  // Hex of 8 letters or more is an id; shorter letter runs are words.
  EXPECT_EQ(Masked("crc deadbeef ok, added face"), "crc <*> ok, added face");
  // Runs with a digit inside a word are masked alone; letters around them stay.
  EXPECT_EQ(Masked("BIOS-e820: HTTP/1.1 IOThunderboltSwitch<0>(0x0)::cb"),
            "BIOS-<*>: HTTP/<*> IOThunderboltSwitch<<*>>(<*>)::cb");
  EXPECT_EQ(Masked("took 1.13 s on 2026-05-12 at 08:01:39,978 host calvisitor-10-105-160-95"),
            "took <*> s on <*> at <*>,<*> host calvisitor-<*>");
  // A name before a number keeps its letters, unless the run could be hex.
  EXPECT_EQ(Masked("via SOCKS5 on node129 and wl0, e820 a3f9c2"),
            "via SOCKS<*> on node<*> and wl<*>, <*> <*>");
  // Dates: day and month names are values too.
  EXPECT_EQ(Masked("at Fri Jun 17 07:07:00 2005, May 3."), "at <*> <*> <*> <*> <*>, <*> <*>.");
  // Blanks: runs of spaces and tabs become one space; none at the ends.
  EXPECT_EQ(Masked("  a \t\t b  "), "a b");
  EXPECT_EQ(Masked(""), "");
  // Masking a masked text changes nothing (template files rely on it).
  const std::string once = Masked("x=5 at /tmp/f 10.1.2.3:80 blk_-12 v2 <*>");
  EXPECT_EQ(Masked(once), once);
}

TEST(TemplateMinerTest, LinesMergeIntoTemplatesAtTheSimilarityThreshold) {
  TemplateMiner m;  // depth 4 (two leading tokens route), similarity 0.7
  EXPECT_EQ(m.Add("Connection from 10.0.0.1 closed"), 0u);
  EXPECT_EQ(m.Add("Connection from 10.0.0.2 closed"), 0u);
  // 3 of 4 tokens equal (0.75 >= 0.7): joins; the template already has the wildcard.
  EXPECT_EQ(m.Add("Connection from host-a closed"), 0u);
  EXPECT_EQ(m.Text(0), "Connection from <*> closed");
  EXPECT_EQ(m.Count(0), 3u);
  // Another token count is another branch of the tree.
  EXPECT_EQ(m.Add("Disk sda failed"), 1u);
  // Same count, but the second token "to" has no branch under "Connection": new.
  EXPECT_EQ(m.Add("Connection to server lost"), 2u);
  // The two leading tokens route, so a variable there (no digit to mask) separates.
  EXPECT_EQ(m.Add("Disk sdb failed"), 3u);
  // Refinement: 5 of 6 equal (0.83) merges and makes the differing token a wildcard...
  EXPECT_EQ(m.Add("session opened for alice by root"), 4u);
  EXPECT_EQ(m.Add("session opened for bob by root"), 4u);
  EXPECT_EQ(m.Text(4), "session opened for <*> by root");
  // ... and then a line differing in a constant too has 4 of 6 (0.67 < 0.7): new.
  EXPECT_EQ(m.Add("session opened for carol by admin"), 5u);
  EXPECT_EQ(m.Text(5), "session opened for carol by admin");
  EXPECT_EQ(m.size(), 6u);
  // Blank messages are the empty template.
  EXPECT_EQ(m.Add("   "), 6u);
  EXPECT_EQ(m.Add(""), 6u);
  EXPECT_EQ(m.Text(6), "");
}

// Names (a capital letter first) are constants: two lines that differ in a name never
// merge, however similar; lower-case values do.
TEST(TemplateMinerTest, DifferentNamesAreDifferentTemplates) {
  TemplateMiner m;
  // 7 tokens; the second line has 5 equal (0.71 >= 0.7) but NEW/SCHEDULED and
  // SCHEDULED/RUNNING are names that differ.
  EXPECT_EQ(m.Add("task_1 Task Transitioned from NEW to SCHEDULED"), 0u);
  EXPECT_EQ(m.Add("task_2 Task Transitioned from SCHEDULED to RUNNING"), 1u);
  EXPECT_EQ(m.Add("task_3 Task Transitioned from NEW to SCHEDULED"), 0u);
  EXPECT_EQ(m.Text(0), "task_<*> Task Transitioned from NEW to SCHEDULED");
  // "HTTPS" and "SOCKS<*>" (masked SOCKS5) are names too.
  EXPECT_EQ(m.Add("10.0.0.1:80 open through proxy p.example.com:5070 HTTPS"), 2u);
  EXPECT_EQ(m.Add("10.0.0.2:22 open through proxy s.example.com:5070 SOCKS5"), 3u);
  EXPECT_EQ(m.Match("10.0.0.3:22 open through proxy s.example.com:5070 SOCKS4"), 3u);
  // Lower-case values merge: 5 of 6 equal.
  EXPECT_EQ(m.Add("session opened for user cyrus by uid=0"), 4u);
  EXPECT_EQ(m.Add("session opened for user root by uid=0"), 4u);
  EXPECT_EQ(m.Text(4), "session opened for user <*> by uid=<*>");
  // Match sees a name it never interned as a name: no merge with "NEW".
  EXPECT_EQ(m.Match("task_4 Task Transitioned from PENDING to SCHEDULED"), kNoTemplate);
}

TEST(TemplateMinerTest, MatchChangesNothing) {
  TemplateMiner m;
  m.Add("job 17 started on node a1");
  EXPECT_EQ(m.Match("job 99 started on node b7"), 0u);
  EXPECT_EQ(m.Match("job 99 finished on node b7"), 0u) << "5 of 6 equal";
  EXPECT_EQ(m.Match("job 99 finished on rack b7"), kNoTemplate) << "4 of 6 equal";
  EXPECT_EQ(m.Match("job 99 never seen tokens here"), kNoTemplate);
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.Count(0), 1u);
  EXPECT_EQ(m.Text(0), "job <*> started on node <*>");
}

TEST(TemplateMinerTest, FullNodesSendNewTokensDownTheWildcardBranch) {
  MinerOptions o;
  o.depth = 3;  // one leading token routes
  o.max_children = 1;
  TemplateMiner m(o);
  EXPECT_EQ(m.Add("alpha one two"), 0u);
  // The count node holds one named child ("alpha"): "beta" goes down the wildcard branch,
  // whose leaf is empty.
  EXPECT_EQ(m.Add("beta one two"), 1u);
  // Same branch; 2 of 3 equal (0.67 < 0.7): new.
  EXPECT_EQ(m.Add("gamma one two"), 2u);
  o.similarity = 0.6;
  TemplateMiner loose(o);
  loose.Add("alpha one two");
  loose.Add("beta one two");
  EXPECT_EQ(loose.Add("gamma one two"), 1u);
  EXPECT_EQ(loose.Text(1), "<*> one two");
  // "alpha ..." still has its own branch.
  EXPECT_EQ(loose.Add("alpha one two"), 0u);
}

TEST(TemplateMinerTest, OptionsAreChecked) {
  MinerOptions o;
  EXPECT_TRUE(ValidateOptions(o).ok());
  o.depth = 2;
  EXPECT_NE(ValidateOptions(o).message().find("depth 2"), std::string::npos);
  o = {};
  o.similarity = 1.5;
  EXPECT_NE(ValidateOptions(o).message().find("similarity"), std::string::npos);
  o = {};
  o.max_children = 0;
  EXPECT_NE(ValidateOptions(o).message().find("max_children"), std::string::npos);
}

// A baseline's templates reused on an incident: old templates keep their ids and their
// lines find them; a new kind of line gets the next id.
TEST(TemplateMinerTest, SavedTemplatesAreReusedWithTheirIds) {
  TemplateMiner base;
  base.Add("Received request cmpl-1a2b from 10.0.0.1");
  base.Add("Received request cmpl-3c4d from 10.0.0.2");
  base.Add("Finished request cmpl-1a2b in 12 ms");
  const std::string text = base.Serialize();
  EXPECT_EQ(text,
            "teller-log-templates 1 depth=4 similarity=0.69999999999999996 max_children=100\n"
            "0 2 Received request cmpl-<*> from <*>\n"
            "1 1 Finished request cmpl-<*> in <*> ms\n");
  char dir[] = "/tmp/teller_logs_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/base.templates";
  ASSERT_TRUE(base.Save(path).ok());
  auto loaded = TemplateMiner::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  TemplateMiner& incident = loaded.value();
  EXPECT_EQ(incident.size(), 2u);
  EXPECT_EQ(incident.Count(0), 2u);
  EXPECT_EQ(incident.options().similarity, 0.7);
  EXPECT_EQ(incident.Add("Finished request cmpl-9f in 4000 ms"), 1u);
  EXPECT_EQ(incident.Add("CUDA out of memory. Tried to allocate 2.00 GiB"), 2u);
  EXPECT_EQ(incident.Add("Received request cmpl-77 from 10.0.0.9"), 0u);
  EXPECT_EQ(incident.Count(0), 3u);
  EXPECT_EQ(incident.Serialize().substr(text.find('\n') + 1),
            "0 3 Received request cmpl-<*> from <*>\n"
            "1 2 Finished request cmpl-<*> in <*> ms\n"
            "2 1 CUDA out of memory. Tried to allocate <*> GiB\n");
  std::remove(path.c_str());
  rmdir(dir);
}

TEST(TemplateMinerTest, HandWrittenTemplatesAreMasked) {
  auto m = TemplateMiner::Parse(
      "teller-log-templates 1 depth=4 similarity=0.7 max_children=100\n"
      "0 0 disk 3 failed\n"
      "1 0\n",
      "hand.templates");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->Text(0), "disk <*> failed");
  EXPECT_EQ(m->Text(1), "") << "a template with no tokens";
  EXPECT_EQ(m->Add("disk 12 failed"), 0u);
}

TEST(TemplateMinerTest, DamagedTemplateFilesNameFileAndLine) {
  const std::string header = "teller-log-templates 1 depth=4 similarity=0.7 max_children=100\n";
  struct Case {
    std::string text;
    std::string error;  // the message starts with this
  };
  const Case cases[] = {
      {"", "t.tpl:1: not a template file"},
      {"teller-log-templates 2 depth=4\n", "t.tpl:1: not a template file"},
      {"teller-log-templates 1 depth=x\n", "t.tpl:1: bad value in 'depth=x'"},
      {"teller-log-templates 1 depth=2\n", "t.tpl:1: template mining: depth 2"},
      {"teller-log-templates 1 colour=red\n", "t.tpl:1: unknown field 'colour=red'"},
      {header + "0 1 a b\nx 1 c\n", "t.tpl:3: expected '<id> <count> <template>'"},
      {header + "0 1 a b\n1\n", "t.tpl:3: expected '<id> <count> <template>'"},
      {header + "0 -1 a b\n", "t.tpl:2: expected '<id> <count> <template>'"},
      {header + "0 1 a b\n2 1 c\n", "t.tpl:3: template id 2 where 1 was expected"},
  };
  for (const Case& c : cases) {
    auto m = TemplateMiner::Parse(c.text, "t.tpl");
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_EQ(m.status().message().rfind(c.error, 0), 0u) << m.status().message();
  }
  auto missing = TemplateMiner::Load("/nonexistent/dir/x.templates");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open template file /nonexistent/dir/x"),
            std::string::npos);
}

TEST(GroupingAccuracyTest, ALineIsRightWhenItsGroupIsExactlyItsTrueGroup) {
  // Mined 5 = {0,1} is true group 0: right. True group 1 = {2,3} is split: both wrong.
  // Mined 8 = {4} is true group 2: right. 3 of 5.
  EXPECT_DOUBLE_EQ(GroupingAccuracy({0, 0, 1, 1, 2}, {5, 5, 6, 7, 8}), 0.6);
  // One mined group over two true groups: nothing right.
  EXPECT_DOUBLE_EQ(GroupingAccuracy({0, 1}, {3, 3}), 0.0);
  // Labels are only compared for equality.
  EXPECT_DOUBLE_EQ(GroupingAccuracy({7, 7, 9}, {1, 1, 0}), 1.0);
  EXPECT_DOUBLE_EQ(GroupingAccuracy({}, {}), 1.0);
}

}  // namespace
}  // namespace teller::logs
