// CS_HD marks a function that is compiled for both the host and the GPU.
//
// Per-format decoder logic (checksums, shuffles, container parsers) is written once and shared
// by the CPU codecs and the CUDA kernels. Under nvcc such functions must carry
// `__host__ __device__`; in a plain C++ build the qualifiers do not exist, so CS_HD expands to
// nothing. Code marked CS_HD uses no exceptions, no std:: containers and no host-only library
// calls: it reports failures through status codes that the host wrappers turn into errors.
#pragma once

#if defined(__CUDACC__)
#define CS_HD __host__ __device__
#else
#define CS_HD
#endif

// Put before a CS_HD function template that device code instantiates with device-only
// arguments (a warp's copier): nvcc then checks the host/device calls per instantiation
// instead of warning about the host side of a device-only instantiation.
#if defined(__CUDACC__)
#define CS_HD_TEMPLATE _Pragma("nv_exec_check_disable")
#else
#define CS_HD_TEMPLATE
#endif

// True while nvcc compiles the device side of a translation unit.
#if defined(__CUDA_ARCH__)
#define CS_DEVICE_PASS 1
#else
#define CS_DEVICE_PASS 0
#endif
