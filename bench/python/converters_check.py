#!/usr/bin/env python3
"""Dataset.from_pyg and Dataset.from_dgl against the real libraries (bench/.venv has torch, PyG and
DGL): a PyG Data, a DGL graph and the same arrays train to identical GCN losses; a HeteroData
converts. Run from the repository root after building the module:

  PYTHONPATH=python FLEXGRAPH_MODULE_DIR=build/release/python/flexgraph bench/.venv/bin/python \
      bench/python/converters_check.py
"""
import numpy as np, torch, flexgraph
from torch_geometric.data import Data, HeteroData
import dgl
torch.manual_seed(0)
n = 300
src = torch.randint(0, n, (2000,)); dst = torch.randint(0, n, (2000,))
y = torch.randint(0, 3, (n,)); x = torch.randn(n, 8) + torch.nn.functional.one_hot(y, 8).float() * 2
mask = torch.zeros(n, dtype=torch.bool); mask[:200] = True
val = torch.zeros(n, dtype=torch.bool); val[200:250] = True
test = torch.zeros(n, dtype=torch.bool); test[250:] = True
data = Data(x=x, edge_index=torch.stack([src, dst]), y=y, train_mask=mask, val_mask=val, test_mask=test)
ds_pyg = flexgraph.Dataset.from_pyg(data)
run_pyg = flexgraph.train(ds_pyg, model="gcn", epochs=5, seed=1)
g = dgl.graph((src, dst), num_nodes=n)
g.ndata["feat"] = x; g.ndata["label"] = y
g.ndata["train_mask"] = mask; g.ndata["val_mask"] = val; g.ndata["test_mask"] = test
ds_dgl = flexgraph.Dataset.from_dgl(g)
run_dgl = flexgraph.train(ds_dgl, model="gcn", epochs=5, seed=1)
arr = flexgraph.Dataset.from_arrays(np.stack([src.numpy(), dst.numpy()]), features=x.numpy(), labels=y.numpy(), train=mask.numpy(), valid=val.numpy(), test=test.numpy())
run_arr = flexgraph.train(arr, model="gcn", epochs=5, seed=1)
lp = [h["loss"] for h in run_pyg.history]; ld = [h["loss"] for h in run_dgl.history]; la = [h["loss"] for h in run_arr.history]
print("pyg", lp); print("dgl", ld); print("arrays", la)
assert np.allclose(lp, la) and np.allclose(ld, la), "converted datasets train differently"
h = HeteroData()
h["paper"].x = torch.randn(50, 4); h["paper"].y = torch.randint(0, 2, (50,))
h["author"].x = torch.randn(30, 4)
h["author", "writes", "paper"].edge_index = torch.stack([torch.randint(0, 30, (100,)), torch.randint(0, 50, (100,))])
hd = flexgraph.Dataset.from_pyg(h)
print("hetero ok", hd)
print("torch", torch.__version__, "pyg", __import__("torch_geometric").__version__, "dgl", dgl.__version__)
