// Single-process commands of the real `flexgraph` binary: an out-of-tree model loaded with
// --udf_library, a saved model predicting and embedding as trained, every command's flags checked
// with errors naming the flag, file or field, and training under a per-process memory limit.
// What an adversarial pass over the binary found (each fails before its fix): a failed run's
// summary path is left alone; generate and convert refuse a filled directory; two runs cannot share
// a checkpoint directory; resume refuses changed dataset files; absent splits are reported as such;
// link prediction reports its own metrics; embed checks --top_k before writing; partition reads its
// config's parts and method; predict refuses a parameter file that fails its checksum.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/runtime/process_util.h"
#include "tests/runtime/scratch_dir.h"

namespace {

using namespace fg::testing;  // NOLINT: the process helpers

// An .npy file of an empty int64 array, as numpy.save(np.zeros(0, np.int64)) writes it.
std::string EmptyInt64Npy() {
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (0,), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header;
}

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
  // A failed run leaves the file its summary would have replaced as it was.
  EXPECT_EQ(Shell(kFlexgraph + " train --dataset /nonexistent/dir --summary_json " + json, &out), 1);
  EXPECT_EQ(Field(Read(json), "epochs"), 2) << "a failed run removed the previous summary";
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

TEST(Train, ShadowSamplingThroughTheBinary) {
  // `--sampler shadow` as a user types it: two hops of 5 and 3, the pooled readout, two epochs of
  // Cora in batches of 128; the summary has both epochs' falling losses. A bad option is named.
  const std::string json = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_shadow.json";
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " train --quiet --dataset " + kCora + " --model gcn --sampler shadow --fanouts 5,3 "
                  "--sampler_opt pool=mean --batch_size 128 --epochs 2 --threads 1 --summary_json " + json, &out), 0)
      << out;
  const std::vector<double> losses = Losses(Read(json));
  ASSERT_EQ(losses.size(), 2u) << Read(json);
  EXPECT_LT(losses[1], losses[0]);
  EXPECT_GT(Field(Read(json), "test_accuracy"), 1.0 / 7);  // above chance on 7 classes
  EXPECT_NE(Shell(kFlexgraph + " train --quiet --dataset " + kCora + " --sampler shadow --sampler_opt pool=max "
                  "--batch_size 128 --epochs 1", &out), 0);
  EXPECT_NE(out.find("--sampler_opt pool: expected none or mean, got 'max'"), std::string::npos) << out;
}

TEST(Plan, WorkersSharingADeviceShareItsRatesAndMemory) {
  const std::string dir = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_sharing";
  std::filesystem::create_directories(dir);
  const std::string plan = kFlexgraph + " plan --vertices 1e6 --edges 1e7 --features 64 --classes 8 --workers 8";
  std::string out;
  ASSERT_EQ(Shell(plan + " --summary_json " + dir + "/alone.json", &out), 0) << out;
  ASSERT_EQ(Shell(plan + " --workers_per_device 4 --summary_json " + dir + "/shared.json", &out), 0) << out;
  EXPECT_NE(out.find("shared by 4 workers"), std::string::npos) << out;
  const std::string alone = Read(dir + "/alone.json"), shared = Read(dir + "/shared.json");
  EXPECT_NEAR(Field(shared, "device_memory_bytes"), Field(alone, "device_memory_bytes") / 4, 1e-5 * Field(shared, "device_memory_bytes"));
  // Every strategy's compute term grows fourfold; its bytes stay.
  const std::regex compute("\"compute_seconds\": ([0-9.e+-]+)"), sent("\"bytes_sent_per_worker\": ([0-9.e+-]+)");
  for (const std::regex* re : {&compute, &sent}) {
    std::sregex_iterator a(alone.begin(), alone.end(), *re), b(shared.begin(), shared.end(), *re), end;
    int strategies = 0;
    for (; a != end && b != end; ++a, ++b, ++strategies) {
      const double x = std::stod((*a)[1].str()), y = std::stod((*b)[1].str());
      EXPECT_NEAR(y, re == &compute ? 4 * x : x, 1e-5 * y) << strategies;
    }
    EXPECT_GT(strategies, 4);
  }
  EXPECT_EQ(Shell(plan + " --workers_per_device 16", &out), 2);
  EXPECT_NE(out.find("--workers_per_device 16 exceeds --workers 8"), std::string::npos) << out;
}

TEST(Plan, ExplainPutsARunsMeasuredBytesBesideThePrediction) {
  // Launched workers on a hash and a METIS partition; `plan --explain` rebuilds each partition as
  // the launch made it (the run's train seed; METIS weighted by the model's cost model) and its 1D
  // prediction must equal the bytes the workers counted, exactly.
  const std::string dir = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_explain";
  std::filesystem::create_directories(dir);
  const std::string data = " --dataset rmat:scale=11,edge_factor=8,features=32,classes=4 --model gcn --hidden 16";
  std::string out;
  for (const auto& [partition, workers] : {std::pair<std::string, int>{"metis", 4}, {"hash", 2}}) {
    SCOPED_TRACE(partition);
    ASSERT_EQ(Shell(kFlexgraph + " launch --quiet --workers " + std::to_string(workers) + " --partition " + partition +
                        " --log_dir " + dir + "/logs -- train" + data + " --epochs 3 --threads 1 --quiet --summary_json " +
                        dir + "/run.json", &out), 0) << out;
    ASSERT_EQ(Shell(kFlexgraph + " plan" + data + " --partitions " + partition + " --seed 0 --explain " + dir +
                        "/run.json --workers " + std::to_string(workers), &out), 0) << out;
    for (const char* what : {"exchange bytes per worker and epoch", "gradient all-reduce per worker and epoch"}) {
      std::smatch m;
      ASSERT_TRUE(std::regex_search(out, m, std::regex(std::string(what) + ": predicted ([0-9]+), measured ([0-9]+)")))
          << out;
      EXPECT_EQ(m[1].str(), m[2].str()) << what;
      EXPECT_NE(m[1].str(), "0") << what;
    }
  }
  const std::string plan = kFlexgraph + " plan" + data + " --partitions hash --seed 0 --explain " + dir + "/run.json";
  EXPECT_EQ(Shell(kFlexgraph + " plan" + data + " --partitions hash --workers 2 --explain " + dir + "/run.json", &out), 2);
  EXPECT_NE(out.find("the run's partition used seed 0, --seed is 1: give --seed 0"), std::string::npos) << out;
  EXPECT_EQ(Shell(plan + " --workers 3", &out), 2);
  EXPECT_NE(out.find("the run had 2 workers, --workers is 3"), std::string::npos) << out;
  std::ofstream(dir + "/other.json") << "{\"epochs\": 3}";
  EXPECT_EQ(Shell(kFlexgraph + " plan" + data + " --workers 2 --explain " + dir + "/other.json", &out), 2);
  EXPECT_NE(out.find(dir + "/other.json: no world_size or epochs"), std::string::npos) << out;
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

// --- What an adversarial pass over the binary found (issue 53, item 7) ---------------------------

// Files of a directory, sorted (empty when it does not exist).
std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

const std::string kSbm = "sbm:nodes=300,classes=3,features=8";

TEST(Cli, AFailedRunLeavesTheFileItsSummaryWouldReplace) {
  // `--summary_json D/raw/edge.csv.gz` once deleted a dataset file at start-up, before the run
  // failed.
  const std::string d = ScratchDir("fg_cli_summary_kept");
  const std::string file = d + "/edge.csv.gz";
  std::ofstream(file) << "a dataset file";
  std::string out;
  EXPECT_EQ(Shell(kFlexgraph + " train --dataset /nonexistent/dir --summary_json " + file, &out), 1)
      << out;
  EXPECT_EQ(Read(file), "a dataset file");
  EXPECT_NE(Shell(kFlexgraph + " launch --quiet --workers 2 --log_dir " + d +
                      "/logs -- train --dataset "
                      "/nonexistent/dir --summary_json " +
                      file,
                  &out),
            0)
      << out;
  EXPECT_EQ(Read(file), "a dataset file");
  EXPECT_EQ(
      Shell(kFlexgraph + " train --dataset " + kSbm + " --lr -1 --summary_json " + file, &out), 2)
      << out;
  EXPECT_EQ(Read(file), "a dataset file");
  // A run that finishes replaces it whole, leaving no temporary file.
  ASSERT_EQ(
      Shell(kFlexgraph + " train --quiet --dataset " + kSbm + " --epochs 2 --summary_json " + file,
            &out),
      0)
      << out;
  EXPECT_EQ(Field(Read(file), "epochs"), 2);
  EXPECT_EQ(Files(d), (std::vector<std::string>{"edge.csv.gz", "logs"}));
}

TEST(Cli, GenerateAndConvertRefuseADirectoryThatHoldsFiles) {
  // Writing into an existing dataset directory mixes layouts or leaves old splits behind: refused,
  // as `partition --out` refuses, before anything is generated or loaded, and nothing is touched.
  const std::string d = ScratchDir("fg_cli_out_dirs");
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " generate " + kSbm + " --out " + d + "/data", &out), 0) << out;
  const std::vector<std::string> before = Files(d + "/data");
  ASSERT_FALSE(before.empty());
  for (const std::string format : {"ogb", "npy"}) {
    EXPECT_EQ(Shell(kFlexgraph + " generate " + kSbm + ",seed=9 --format " + format + " --out " +
                        d + "/data",
                    &out),
              2)
        << format;
    EXPECT_NE(out.find("--out " + d + "/data: exists and is not empty"), std::string::npos) << out;
  }
  for (const std::string flag : {"--ogb_dir", "--npy_dir"}) {
    EXPECT_EQ(Shell(kFlexgraph + " convert " + kCora + " " + flag + " " + d + "/data", &out), 2)
        << flag;
    EXPECT_NE(out.find(flag + " " + d + "/data: exists and is not empty"), std::string::npos)
        << out;
    EXPECT_EQ(out.find("loaded"), std::string::npos) << "refused only after loading: " << out;
  }
  EXPECT_EQ(Files(d + "/data"), before);
  // The same check and words as partition's.
  EXPECT_EQ(Shell(kFlexgraph + " partition --quiet --dataset " + kSbm +
                      " --parts 2 --method hash --out " + d + "/data",
                  &out),
            2);
  EXPECT_NE(out.find("--out " + d + "/data: exists and is not empty"), std::string::npos) << out;
  // New and empty directories are written.
  std::filesystem::create_directories(d + "/empty");
  EXPECT_EQ(Shell(kFlexgraph + " convert " + d + "/data --npy_dir " + d + "/empty --ogb_dir " + d +
                      "/new",
                  &out),
            0)
      << out;
  EXPECT_TRUE(std::filesystem::exists(d + "/empty/indptr.npy"));
  EXPECT_EQ(Shell(kFlexgraph + " info " + d + "/new", &out), 0) << out;
}

TEST(Cli, TwoRunsCannotShareACheckpointDirectory) {
  // Two runs sharing --checkpoint_dir clobbered each other's checkpoints, and one resumed from the
  // other's: the second is refused, naming the directory and the run holding it.
  const std::string d = ScratchDir("fg_cli_ckpt_lock");
  const std::string train = kFlexgraph + " train --dataset " + kCora +
                            " --threads 1 --quiet --checkpoint_every 1 "
                            "--checkpoint_dir " +
                            d + "/ckpt";
  const pid_t first = fork();
  if (first == 0) {
    const std::string cmd = "exec " + train + " --epochs 5000 > " + d + "/first.out 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  for (int i = 0; i < 1200 && !std::filesystem::exists(d + "/ckpt/checkpoint.pb"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(std::filesystem::exists(d + "/ckpt/checkpoint.pb")) << Read(d + "/first.out");
  std::string out;
  EXPECT_EQ(Shell(train + " --epochs 3", &out), 1);
  EXPECT_NE(out.find("--checkpoint_dir " + d + "/ckpt is in use by another run"), std::string::npos)
      << out;
  EXPECT_NE(out.find("pid " + std::to_string(first)), std::string::npos) << out;
  EXPECT_EQ(Shell(train + " --epochs 5000 --resume --stop_after 1", &out), 1);
  EXPECT_NE(out.find("is in use by another run"), std::string::npos) << out;
  // The lock dies with its holder: a killed run's directory resumes.
  kill(first, SIGKILL);
  int st = 0;
  waitpid(first, &st, 0);
  EXPECT_EQ(Shell(train + " --epochs 5000 --resume --stop_after 1", &out), 0) << out;
}

TEST(Cli, ResumeRefusesADatasetWhoseContentsChanged) {
  // The checkpoint compared only the dataset's path: a run resumed over other data, silently.
  const std::string d = ScratchDir("fg_cli_resume_changed");
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " generate " + kSbm + " --format npy --out " + d + "/data", &out), 0)
      << out;
  ASSERT_EQ(
      Shell(kFlexgraph + " generate " + kSbm + ",seed=7 --format npy --out " + d + "/other", &out),
      0)
      << out;
  const std::string train = kFlexgraph + " train --dataset " + d +
                            "/data --epochs 6 --threads 1 --quiet "
                            "--checkpoint_every 1 --checkpoint_dir " +
                            d + "/ckpt --stop_after 2";
  ASSERT_EQ(Shell(train, &out), 0) << out;
  ASSERT_EQ(Shell(train + " --resume", &out), 0) << out;  // the same data resumes
  // Other features of the same size, the file's time kept: the contents differ.
  const auto when = std::filesystem::last_write_time(d + "/data/feat.npy");
  std::filesystem::copy_file(d + "/other/feat.npy", d + "/data/feat.npy",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::last_write_time(d + "/data/feat.npy", when);
  EXPECT_EQ(Shell(train + " --resume", &out), 1);
  EXPECT_NE(out.find("feat.npy"), std::string::npos) << out;
  EXPECT_NE(out.find("dataset changed since the checkpoint"), std::string::npos) << out;
  // A file added to the dataset is named too.
  std::filesystem::copy_file(d + "/other/feat.npy", d + "/data/feat.npy",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove(d + "/data/test_idx.npy");
  EXPECT_EQ(Shell(train + " --resume", &out), 1);
  EXPECT_NE(out.find("test_idx.npy"), std::string::npos) << out;
}

TEST(Cli, MissingSplitsAreReportedAsAbsentNotAsZero) {
  const std::string d = ScratchDir("fg_cli_splits");
  std::string out;
  // No test split: no test metrics (null in the summary), said in the result line, not 0.0000.
  ASSERT_EQ(Shell(kFlexgraph + " generate " + kSbm + " --format npy --out " + d + "/no_test", &out),
            0)
      << out;
  std::filesystem::remove(d + "/no_test/test_idx.npy");
  ASSERT_EQ(Shell(kFlexgraph + " train --quiet --dataset " + d +
                      "/no_test --epochs 3 --summary_json " + d + "/nt.json",
                  &out),
            0)
      << out;
  EXPECT_NE(out.find("no test split"), std::string::npos) << out;
  EXPECT_EQ(out.find("test accuracy 0.0000"), std::string::npos) << out;
  const std::string nt = Read(d + "/nt.json");
  for (const char* key : {"test_accuracy", "test_macro_f1", "test_micro_f1"}) {
    EXPECT_NE(nt.find("\"" + std::string(key) + "\": null"), std::string::npos)
        << key << ": " << nt;
  }
  // An empty validation split: the last epoch is the one selected (what a DGL or PyG script
  // without validation keeps), and the run says so; never epoch 1 by a comparison with nothing.
  ASSERT_EQ(
      Shell(kFlexgraph + " generate " + kSbm + " --format npy --out " + d + "/no_valid", &out), 0)
      << out;
  { std::ofstream(d + "/no_valid/valid_idx.npy", std::ios::binary) << EmptyInt64Npy(); }
  ASSERT_EQ(Shell(kFlexgraph + " train --dataset " + d + "/no_valid --epochs 4 --summary_json " +
                      d + "/nv.json",
                  &out),
            0)
      << out;
  EXPECT_NE(out.find("no validation split: the last epoch is selected"), std::string::npos) << out;
  const std::string nv = Read(d + "/nv.json");
  EXPECT_EQ(Field(nv, "best_epoch"), 4) << nv;
  EXPECT_NE(nv.find("\"valid_accuracy\": null"), std::string::npos) << nv;
  EXPECT_GE(Field(nv, "test_accuracy"), 0) << nv;
}

TEST(Cli, LinkPredictionReportsItsOwnMetricsAndEmbedChecksTopKBeforeWriting) {
  const std::string d = ScratchDir("fg_cli_links");
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " train --quiet --model pinsage --dataset " +
                      std::string(FG_SHARED_DATA_DIR) + "/lastfm --epochs 2 --summary_json " + d +
                      "/lp.json --save_model " + d + "/model",
                  &out),
            0)
      << out;
  // Its own metric names: no accuracy (an AUC is not one), the AUC under its name.
  EXPECT_NE(out.find("test AUC"), std::string::npos) << out;
  EXPECT_EQ(out.find("accuracy"), std::string::npos) << out;
  const std::string lp = Read(d + "/lp.json");
  for (const char* key : {"test_accuracy", "valid_accuracy", "valid_macro_f1", "test_macro_f1"}) {
    EXPECT_NE(lp.find("\"" + std::string(key) + "\": null"), std::string::npos)
        << key << ": " << lp;
  }
  EXPECT_GT(Field(lp, "valid_auc"), 0) << lp;
  EXPECT_GT(Field(lp, "test_auc"), 0) << lp;
  // --top_k is checked before anything is written (it ended in std::bad_alloc after --out).
  for (const std::string k : {"0", "100000000"}) {
    EXPECT_EQ(Shell(kFlexgraph + " embed --model_dir " + d + "/model --out " + d +
                        "/h.npy --recommend " + d + "/r.csv --top_k " + k,
                    &out),
              2)
        << k;
    EXPECT_NE(out.find("--top_k"), std::string::npos) << out;
    EXPECT_EQ(out.find("bad_alloc"), std::string::npos) << out;
    EXPECT_FALSE(std::filesystem::exists(d + "/h.npy")) << k;
    EXPECT_FALSE(std::filesystem::exists(d + "/r.csv")) << k;
  }
  EXPECT_EQ(Shell(kFlexgraph + " embed --model_dir " + d + "/model --out " + d +
                      "/h.npy --recommend " + d + "/r.csv --top_k 3",
                  &out),
            0)
      << out;
}

TEST(Cli, PartitionTakesPartsAndMethodFromItsConfig) {
  const std::string d = ScratchDir("fg_cli_partition_config");
  std::ofstream(d + "/p.txt") << "dataset { path: \"" << kSbm
                              << "\" }\npartition { parts: 3 method: \"hash\" }\n";
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " partition --config " + d + "/p.txt --out " + d + "/parts", &out),
            0)
      << out;
  EXPECT_NE(out.find("3 parts, method hash"), std::string::npos) << out;
  // Flags still win over the file.
  ASSERT_EQ(
      Shell(kFlexgraph + " partition --config " + d + "/p.txt --parts 2 --out " + d + "/parts2",
            &out),
      0)
      << out;
  EXPECT_NE(out.find("2 parts, method hash"), std::string::npos) << out;
  std::ofstream(d + "/bad.txt") << "dataset { path: \"" << kSbm
                                << "\" }\npartition { parts: -3 }\n";
  EXPECT_EQ(Shell(kFlexgraph + " partition --config " + d + "/bad.txt --out " + d + "/bad", &out),
            2);
  EXPECT_NE(out.find("partition.parts: must be at least 1, got -3"), std::string::npos) << out;
  std::ofstream(d + "/bad_method.txt")
      << "dataset { path: \"" << kSbm << "\" }\npartition { method: \"best\" }\n";
  EXPECT_EQ(
      Shell(kFlexgraph + " partition --config " + d + "/bad_method.txt --out " + d + "/bad", &out),
      2);
  EXPECT_NE(out.find("partition.method"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(d + "/bad"));
}

TEST(Cli, PredictRefusesADamagedSavedModel) {
  const std::string d = ScratchDir("fg_cli_model_checksum");
  std::string out;
  ASSERT_EQ(Shell(kFlexgraph + " train --quiet --dataset " + kSbm + " --epochs 2 --save_model " +
                      d + "/model",
                  &out),
            0)
      << out;
  ASSERT_EQ(Shell(kFlexgraph + " predict --model_dir " + d + "/model --out " + d + "/p.csv", &out),
            0)
      << out;
  // One bit of a parameter's data flipped (the .npy header intact): refused, naming the file.
  const std::string param = d + "/model/params/layer0.linear.weight.npy";
  std::string bytes = Read(param);
  ASSERT_GT(bytes.size(), 200u);
  bytes[bytes.size() - 3] ^= 0x10;
  { std::ofstream(param, std::ios::binary) << bytes; }
  EXPECT_EQ(Shell(kFlexgraph + " predict --model_dir " + d + "/model --out " + d + "/q.csv", &out),
            1);
  EXPECT_NE(out.find(param + ": checksum mismatch"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(d + "/q.csv"));
}

}  // namespace
