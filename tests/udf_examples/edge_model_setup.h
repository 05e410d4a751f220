// Tests of edge-classifying models on graph sets: a dataset, its edge-classification task and a
// registered model's spec and instance, built as the Trainer builds them (unbuilt: the test calls
// Model::Build).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "flexgraph/graph/dataset.h"
#include "nau/model.h"
#include "runtime/tasks/graph_tasks.h"

namespace fg::runtime::testing {

struct EdgeModelSetup {
  graph::Dataset ds;
  std::unique_ptr<GraphSetTask> task;
  std::unique_ptr<nau::Model> model;
  nau::VertexSpace space;
  nau::ModelSpec spec;
};

// `model_opts` are the model's options; `task_opts` the edge task's.
inline std::unique_ptr<EdgeModelSetup> MakeEdgeModel(const std::string& model, const std::string& data, int hidden,
                                                     int layers, const std::map<std::string, std::string>& model_opts,
                                                     const std::map<std::string, std::string>& task_opts) {
  auto s = std::make_unique<EdgeModelSetup>();
  auto ds = graph::LoadDataset(data, {});
  EXPECT_TRUE(ds.ok()) << ds.status();
  s->ds = std::move(ds).value();
  const nau::ModelInfo* info = nau::ModelRegistry::Get().Find(model);
  EXPECT_NE(info, nullptr) << model;
  auto task = MakeGraphSetTask(&s->ds, nau::OptionValues(EdgeClassificationTask::Options(), task_opts));
  EXPECT_TRUE(task.ok()) << task.status();
  s->task = std::move(task).value();
  s->space = nau::VertexSpace(s->ds.graph);
  s->spec.dataset = &s->ds;
  s->spec.vertices = &s->space;
  s->spec.target_type = "node";
  s->spec.num_classes = s->task->num_classes();
  s->spec.hidden = hidden;
  s->spec.layers = layers;
  s->spec.seed = 1;
  s->spec.options = nau::OptionValues(info->options, model_opts);
  s->model = info->factory();
  return s;
}

}  // namespace fg::runtime::testing
