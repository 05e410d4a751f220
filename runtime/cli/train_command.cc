// `flexgraph train`: single-process training (see runtime/train/trainer.h).
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/fault.h"
#include "flexgraph/base/status.h"
#include "nau/model.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/train_flags.h"
#include "flexgraph/graph/io/file.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/trainer.h"

namespace fg::cli {

namespace {

int Train(const std::vector<std::string>& args) {
  SetFaultProcess("train");
  FlagSet flags("train", "Trains a registered model on one machine: full batch, or sampled mini-batches with --batch_size.");
  AddTrainFlags(&flags);
  if (auto s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "flexgraph train: %s\n\n%s", std::string(s.message()).c_str(),
                 flags.Usage().c_str());
    return 2;
  }
  if (flags.help_requested()) {
    // --model M --help: that model's defaults and options (after loading --udf_library).
    if (flags.IsSet("udf_library")) (void)RunConfigFromFlags(flags);
    if (flags.IsSet("model") && nau::ModelRegistry::Get().Find(flags.Get("model")) != nullptr) {
      std::printf("%s", DescribeModel(flags.Get("model")).c_str());
      return 0;
    }
    std::printf("%s\nmodels (--model M --help lists a model's options):", flags.Usage().c_str());
    for (const auto& name : nau::ModelRegistry::Get().Names()) {
      std::printf("\n  %-10s %s", name.c_str(), nau::ModelRegistry::Get().Find(name)->description.c_str());
    }
    std::printf("\n");
    return 0;
  }
  auto options = RunConfigFromFlags(flags);
  if (!options.ok()) {
    std::fprintf(stderr, "flexgraph train: %s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  if (auto s = PrepareOutputs(*options); !s.ok()) {
    std::fprintf(stderr, "flexgraph train: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  auto trainer = runtime::Trainer::Create(*options);
  if (!trainer.ok()) {
    std::fprintf(stderr, "flexgraph train: %s\n", std::string(trainer.status().message()).c_str());
    return 1;
  }
  auto result = (*trainer)->Run();
  if (!result.ok()) {
    std::fprintf(stderr, "flexgraph train: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }
  std::printf("%s\n", runtime::ResultLine(*result).c_str());
  if (const std::string& path = options->output().summary_json(); !path.empty()) {
    if (auto s = graph::io::WriteFileAtomically(path, runtime::SummaryJson(*result));
        !s.ok()) {
      std::fprintf(stderr, "flexgraph train: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  return 0;
}

CommandRegistrar train_command("train", "train a model on one machine", Train);

}  // namespace
}  // namespace fg::cli
