// The 2D (SUMMA) distributed sparse-dense product of CAGNET on a pr x pc grid: the 3D product with
// one fibre layer (spmm_3d.h states the layout, the stages, the bytes and the naming). Worker (i, j)
// holds H[R_i, cols j of pc] and Z the same way; rows() is |R_i|.
#pragma once

#include "runtime/grid/spmm_3d.h"

namespace fg::grid {

using Spmm2D = Spmm3D;

}  // namespace fg::grid
