// FG_HD marks functions shared by the CPU and CUDA backends (__host__ __device__ under nvcc).
#pragma once
#if defined(__CUDACC__)
#define FG_HD __host__ __device__ __forceinline__
#else
#define FG_HD inline
#endif
