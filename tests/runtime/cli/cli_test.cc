// Single-process commands of the real `flexgraph` binary: an out-of-tree model loaded with
// --udf_library, a saved model predicting and embedding as trained, every command's flags checked
// with errors naming the flag, file or field, and training under a per-process memory limit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tests/runtime/process_util.h"
#include "tests/runtime/scratch_dir.h"

namespace {

using namespace fg::testing;  // NOLINT: the process helpers

TEST(Cli, UdfLibraryRegistersAnOutOfTreeModel) {
  const std::string lib = std::string(FG_BINARY_DIR) + "/udf_examples/external_model/libsgc_model.so";
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " train --udf_library " + lib + " --model sgc --dataset " + kCora +
                  " --threads 1", &out), 0) << out;
  // SGC reports 81.0% on Cora (Wu et al., 2019).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("test accuracy ([0-9.]+)"))) << out;
  EXPECT_GE(std::stod(m[1].str()), 0.79);
  EXPECT_EQ(Shell(kFlexgraph + " train --udf_library /nonexistent.so --model sgc", &out), 2);
  EXPECT_NE(out.find("cannot load /nonexistent.so"), std::string::npos) << out;
}

TEST(Cli, ASavedModelPredictsAndEmbedsAsTrained) {
  const std::string d = ScratchDir("fg_cli_saved_model");
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers 2 --log_dir " + d + "/logs -- train --dataset " +
                  kCora + " --epochs 30 --threads 1 --quiet --save_model " + d + "/model --summary_json " +
                  d + "/train.json", &out), 0) << out;
  ASSERT_EQ(Shell(kFlexgraph + " predict --model_dir " + d + "/model --threads 1 --out " + d +
                  "/p.csv --summary_json " + d + "/predict.json", &out), 0) << out;
  // Saved by a distributed run, loaded by one process: the test accuracy it reported.
  EXPECT_EQ(Field(Read(d + "/predict.json"), "test_accuracy"), Field(Read(d + "/train.json"), "test_accuracy"));
  const std::string csv = Read(d + "/p.csv");
  EXPECT_EQ(csv.rfind("node,class,p0,p1,p2,p3,p4,p5,p6\n0,", 0), 0u) << csv.substr(0, 200);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2709);
  std::ofstream(d + "/nodes.txt") << "7\n3\n";
  ASSERT_EQ(Shell(kFlexgraph + " embed --model_dir " + d + "/model --nodes " + d + "/nodes.txt --out " +
                  d + "/h.npy --summary_json " + d + "/embed.json", &out), 0) << out;
  EXPECT_EQ(Field(Read(d + "/embed.json"), "nodes"), 2);
  EXPECT_EQ(Field(Read(d + "/embed.json"), "width"), 16);
  // What the model cannot take is refused naming it; a usage error names the flag.
  EXPECT_EQ(Shell(kFlexgraph + " predict --model_dir " + d + "/model --out " + d + "/q.csv --model sage", &out), 1);
  EXPECT_NE(out.find("model.name: \"gcn\" -> \"sage\""), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " predict --model_dir " + d + "/model --out " + d + "/q.txt", &out), 2);
  EXPECT_NE(out.find("--out " + d + "/q.txt: name a .csv or .npy file"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " predict --model_dir " + d + " --out " + d + "/q.csv", &out), 1);
  EXPECT_NE(out.find("holds no saved model"), std::string::npos) << out;
  // A directory that is not a saved model is not overwritten: refused before anything starts.
  EXPECT_EQ(Shell(kFlexgraph + " train --dataset " + kCora + " --epochs 2 --quiet --save_model " + d + "/logs", &out), 2);
  EXPECT_NE(out.find("not overwritten"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " launch --workers 2 -- train --dataset " + kCora + " --save_model " + d + "/logs", &out), 2);
  EXPECT_NE(out.find("flexgraph launch: --save_model: " + d + "/logs holds files but no saved model"), std::string::npos) << out;
}

TEST(Cli, CommandsAndFlagsAreChecked) {
  std::string out;
  // No GPU here: a clear message and a non-zero exit (with one: not supported by the trainer yet).
  EXPECT_EQ(Shell(kFlexgraph + " train --device cuda --dataset sbm:nodes=100 --epochs 1", &out), 1);
  EXPECT_NE(out.find("device: cuda"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " version", &out), 0);
  EXPECT_NE(out.find("flexgraph "), std::string::npos);
  EXPECT_EQ(Shell(kFlexgraph + " nosuchcommand", &out), 2);
  EXPECT_NE(out.find("unknown command 'nosuchcommand'"), std::string::npos) << out;
  for (const char* cmd : {"train", "launch", "worker", "coordinator", "info", "generate", "convert",
                          "partition", "predict", "embed", "version"}) {
    EXPECT_EQ(Shell(kFlexgraph + " " + cmd + " --help", &out), 0) << cmd << ": " << out;
    EXPECT_NE(out.find("usage: flexgraph " + std::string(cmd)), std::string::npos) << out;
  }
  EXPECT_EQ(Shell(kFlexgraph + " train --epochs 0 --dataset " + kCora, &out), 2);
  EXPECT_NE(out.find("epochs: must be positive"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " train --hidden abc", &out), 2);
  EXPECT_NE(out.find("--hidden"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " train --dataset /nonexistent/dir --epochs 1", &out), 1);
  EXPECT_NE(out.find("/nonexistent/dir"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " train --dataset " + kCora + " --split nosuchsplit --epochs 1", &out), 1);
  EXPECT_NE(out.find("nosuchsplit"), std::string::npos) << out;
  const std::string cfg =
      ::testing::TempDir() + "/" + std::to_string(getpid()) + "_bad_config.txt";
  std::ofstream(cfg) << "model { name: \"gcn\" }\ntrain { epochz: 3 }\n";
  EXPECT_EQ(Shell(kFlexgraph + " train --config " + cfg, &out), 2);
  EXPECT_NE(out.find("bad_config.txt:2"), std::string::npos) << out;
  EXPECT_NE(out.find("epochz"), std::string::npos) << out;
  // Model options: listed per model, unknown or mistyped ones are errors naming them.
  EXPECT_EQ(Shell(kFlexgraph + " train --model pinsage --help", &out), 0);
  for (const char* option : {"num_traces", "top_k", "negatives", "default 10"}) {
    EXPECT_NE(out.find(option), std::string::npos) << option << ": " << out;
  }
  EXPECT_EQ(Shell(kFlexgraph + " train --model gcn --model_opt typo=1", &out), 2);
  EXPECT_NE(out.find("unknown option 'typo' for model gcn (valid: input_dropout)"), std::string::npos)
      << out;
  EXPECT_EQ(Shell(kFlexgraph + " launch --workers 2 -- train --model magnn --model_opt max_instances=x", &out), 2);
  EXPECT_NE(out.find("'max_instances' of model magnn expects an integer"), std::string::npos) << out;
  // A config file and flags: the flag wins.
  const std::string good = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_config.txt";
  std::ofstream(good) << "dataset { path: \"sbm:nodes=200,classes=2,features=4\" }\n"
                         "train { epochs: 7 }\nmodel { name: \"sage\" hidden: 8 }\n";
  const std::string json = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_config.json";
  ASSERT_EQ(Shell(kFlexgraph + " train --quiet --config " + good + " --epochs 2 --summary_json " + json, &out), 0)
      << out;
  const std::string summary = Read(json);
  EXPECT_EQ(Field(summary, "epochs"), 2) << summary;
  EXPECT_NE(summary.find("\"model\": \"sage\""), std::string::npos) << summary;
  // Bad values are refused before anything runs, naming the flag; a failed run leaves no summary.
  EXPECT_EQ(Shell(kFlexgraph + " train --epochs 4294967297", &out), 2);
  EXPECT_NE(out.find("--epochs"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " train --fanouts 5,5 --dataset " + kCora, &out), 2);
  EXPECT_NE(out.find("--fanouts applies to mini-batch training: give --batch_size"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " train --threads 20000", &out), 2);
  EXPECT_NE(out.find("threads: must lie in"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " train --config " + ::testing::TempDir(), &out), 2);
  EXPECT_NE(out.find("is a directory"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " train --summary_json /nonexistent-dir/s.json", &out), 2);
  EXPECT_NE(out.find("--summary_json"), std::string::npos) << out;
  EXPECT_EQ(Shell(kFlexgraph + " train --dataset /nonexistent/dir --summary_json " + json, &out), 1);
  EXPECT_FALSE(std::filesystem::exists(json)) << "a failed run left the previous summary";
  // Launch flags are checked before any process starts.
  for (const char* bad : {"--workers 4294967298", "--exchange foo", "--partition foo", "--heartbeat_timeout 0"}) {
    EXPECT_EQ(Shell(kFlexgraph + " launch " + bad + " -- train", &out), 2) << bad;
    const std::string flag = std::string(bad).substr(0, std::string(bad).find(' '));
    EXPECT_NE(out.find(flag), std::string::npos) << bad << ": " << out;
    EXPECT_EQ(out.find("coordinator on port"), std::string::npos) << bad << ": " << out;
  }
  EXPECT_EQ(Shell("env FG_RUN_TOKEN=t " + kFlexgraph + " coordinator --port 70000 -- train", &out), 2);
  EXPECT_NE(out.find("--port must lie in [0, 65535]"), std::string::npos) << out;
  // More memory than the machine has: an error saying how much, not an abort.
  EXPECT_EQ(Shell(kFlexgraph + " train --hidden 100000000 --epochs 1 --dataset " + kCora, &out), 1);
  EXPECT_NE(out.find("out of memory: allocating"), std::string::npos) << out;
}

TEST(Train, UnderAPerProcessDataLimitEndsTrainingOrSaysOutOfMemory) {
  // Whichever allocation meets the limit first (a tensor, or OpenBLAS's GEMM buffer, which it
  // would retry forever), the run trains or ends with the out-of-memory error within seconds.
  std::string out;
  ASSERT_EQ(Shell("prlimit --version", &out), 0) << "prlimit (util-linux, essential on Debian) is needed: " << out;
  int trained = 0, refused = 0;
  for (int mib = 250; mib <= 900; mib += 50) {
    const int rc = Shell("timeout 60 prlimit --data=" + std::to_string(mib << 20) + " " + kFlexgraph +
                             " train --dataset " + kCora + " --epochs 2 --threads 1 --quiet",
                         &out);
    if (rc == 0) {
      ++trained;
    } else {
      ++refused;
      EXPECT_EQ(rc, 1) << mib << " MiB: " << out;
      EXPECT_NE(out.find("out of memory: allocating"), std::string::npos) << mib << " MiB: " << out;
      EXPECT_NE(out.find("data limit is " + std::to_string(mib) + " MiB"), std::string::npos) << out;
    }
  }
  EXPECT_GT(trained, 0);  // the largest limit leaves room
  EXPECT_GT(refused, 0);  // the smallest does not
}

}  // namespace
