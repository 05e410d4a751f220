// Generator spec strings, accepted wherever a dataset path is:
//   "sbm[:nodes=20000,classes=8,features=64,avg_degree=15,homophily=0.5,noise=6.5,p_in=..,p_out=..,
//        train=0.1,valid=0.1,seed=1]"
//   "rmat[:scale=16,edge_factor=16,features=64,classes=8,noise=6.5,a=0.57,b=0.19,c=0.19,train=0.1,
//         valid=0.1,seed=1]"
//   "trackml[:events=100,particles=500,noise=0.1,seed=1,pt_min=0.5,pt_max=100,pt_slope=3,eta_max=1,
//            vertex_xy=0.015,vertex_z=55,bfield=2,material=0.02,ineff=0.01,smear=1,
//            phi_slope=0.0006,z0_max=200,deta_max=1.5,train=0.8,valid=0.1]"
//   (a dataset of event graphs: gen/trackml.h for the simulation, tracking.h for the graphs)
// RMAT graphs are undirected (reverse edges added, loops and duplicates dropped) with random
// classes and class-correlated features like the SBM's (their structure carries no class signal).
// Thread-safe: no shared state.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"

namespace fg::graph {

// True when `s` starts with "sbm", "rmat" or "trackml" followed by ':' or nothing.
bool IsGeneratorSpec(const std::string& s);
// Generates the dataset a spec names; unknown keys or bad values are errors naming the key.
absl::StatusOr<Dataset> GenerateFromSpec(const std::string& spec);

}  // namespace fg::graph
