// Test helper: the workload options a run of a model resolves to, as `train` and `partition`
// resolve them (runtime/train/config.h).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "partition/workload.h"
#include "runtime/train/config.h"

namespace fg::partition {

inline WorkloadOptions Resolved(const std::string& model,
                                const std::map<std::string, std::string>& options = {},
                                int layers = 0, uint64_t seed = 0) {
  flexgraph::RunConfig c;
  c.mutable_model()->set_name(model);
  if (layers > 0) c.mutable_model()->set_layers(layers);
  c.mutable_train()->set_seed(seed);
  for (const auto& [k, v] : options) (*c.mutable_model()->mutable_options())[k] = v;
  auto r = runtime::ResolveConfig(c);
  EXPECT_TRUE(r.ok()) << r.status();
  return runtime::WorkloadOptionsFrom(*r);
}

}  // namespace fg::partition
