// libhone-hip-nvidia.so: the HIP runtime entry points hip_runtime.h resolves, written over the
// CUDA driver API, so that the worker's real HIP run path (buffers, streams, events, the cache
// flush, checks, timing, faults, ceilings) executes on an NVIDIA GPU (docs/HIP.md, "Testing
// the HIP path on NVIDIA"). Loaded in place of libamdhip64 when HONE_HIP_PLATFORM=nvidia; the
// candidates themselves are nvcc-built against HIP's NVIDIA platform headers and call the CUDA
// runtime directly, in the same primary context. Not a product target: a test bench.
//
// The signatures are those of the AMD hip_runtime_api.h the worker is built with (its types,
// its enum values), so the worker cannot tell the difference. Function handles are CUfunction:
// hipGraphKernelNodeGetParams hands them out and hipFuncGetAttributes and the occupancy call
// take them back (the only way the worker uses them). libcuda is loaded with dlopen, as the
// CUDA backend does, so a host without a driver gets hipErrorNoDevice with the reason.
#include <hip/hip_runtime_api.h>

#include <cuda.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#define HONE_HN_STR2(x) #x
#define HONE_HN_STR(x) HONE_HN_STR2(x)

namespace {

#define HONE_HN_CU(X)                                                                              \
    X(cuInit)                                                                                      \
    X(cuDriverGetVersion)                                                                          \
    X(cuGetErrorName)                                                                              \
    X(cuGetErrorString)                                                                            \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDeviceGetName)                                                                             \
    X(cuDeviceGetAttribute)                                                                        \
    X(cuDeviceTotalMem)                                                                            \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxSynchronize)                                                                            \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuMemcpy)                                                                                    \
    X(cuMemsetD32Async)                                                                            \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuStreamBeginCapture)                                                                        \
    X(cuStreamEndCapture)                                                                          \
    X(cuGraphGetNodes)                                                                             \
    X(cuGraphNodeGetType)                                                                          \
    X(cuGraphKernelNodeGetParams)                                                                  \
    X(cuGraphDestroy)                                                                              \
    X(cuKernelGetFunction)                                                                         \
    X(cuFuncGetAttribute)                                                                          \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                 \
    X(cuEventCreate)                                                                               \
    X(cuEventDestroy)                                                                              \
    X(cuEventRecord)                                                                               \
    X(cuEventSynchronize)                                                                          \
    X(cuEventQuery)                                                                                \
    X(cuEventElapsedTime)

struct Cu {
#define HONE_HN_DECL(name) decltype(&::name) name = nullptr;
    HONE_HN_CU(HONE_HN_DECL)
#undef HONE_HN_DECL
    bool loaded = false;
    CUresult initResult = CUDA_ERROR_NOT_INITIALIZED;
    CUdevice device = 0;
    CUcontext ctx = nullptr;

    Cu()
    {
        void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
        if (!lib)
            return;
        bool all = true;
        // The name each declaration of cuda.h expands to (cuMemAlloc is cuMemAlloc_v2).
#define HONE_HN_LOAD(name)                                                                            \
    name = reinterpret_cast<decltype(name)>(::dlsym(lib, HONE_HN_STR(name)));                      \
    all = all && name != nullptr;
        HONE_HN_CU(HONE_HN_LOAD)
#undef HONE_HN_LOAD
        loaded = all;
    }
};

Cu& cu()
{
    static Cu c;
    return c;
}

thread_local hipError_t t_last = hipSuccess;

hipError_t toHip(CUresult r)
{
    hipError_t h = hipErrorUnknown;
    switch (r) {
    case CUDA_SUCCESS: h = hipSuccess; break;
    case CUDA_ERROR_INVALID_VALUE: h = hipErrorInvalidValue; break;
    case CUDA_ERROR_OUT_OF_MEMORY: h = hipErrorOutOfMemory; break;
    case CUDA_ERROR_NOT_INITIALIZED: h = hipErrorNotInitialized; break;
    case CUDA_ERROR_DEINITIALIZED: h = hipErrorDeinitialized; break;
    case CUDA_ERROR_NO_DEVICE: h = hipErrorNoDevice; break;
    case CUDA_ERROR_INVALID_DEVICE: h = hipErrorInvalidDevice; break;
    case CUDA_ERROR_INVALID_CONTEXT: h = hipErrorInvalidContext; break;
    case CUDA_ERROR_INVALID_HANDLE: h = hipErrorInvalidHandle; break;
    case CUDA_ERROR_NOT_FOUND: h = hipErrorNotFound; break;
    case CUDA_ERROR_NOT_READY: h = hipErrorNotReady; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: h = hipErrorIllegalAddress; break;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: h = hipErrorLaunchOutOfResources; break;
    case CUDA_ERROR_LAUNCH_TIMEOUT: h = hipErrorLaunchTimeOut; break;
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: h = hipErrorContextIsDestroyed; break;
    case CUDA_ERROR_ASSERT: h = hipErrorAssert; break;
    case CUDA_ERROR_LAUNCH_FAILED: h = hipErrorLaunchFailure; break;
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR: h = hipErrorLaunchFailure; break; // sticky on both
    case CUDA_ERROR_NOT_SUPPORTED: h = hipErrorNotSupported; break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: h = hipErrorStreamCaptureUnsupported; break;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: h = hipErrorStreamCaptureInvalidated; break;
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: h = hipErrorStreamCaptureWrongThread; break;
    default: break;
    }
    if (h != hipSuccess)
        t_last = h;
    return h;
}

/// The device's primary context current on this thread (the one the candidates' CUDA runtime
/// uses too); hipErrorNoDevice where there is no driver or GPU.
hipError_t ready()
{
    Cu& c = cu();
    if (!c.loaded)
        return t_last = hipErrorNoDevice;
    if (!c.ctx)
        return t_last = hipErrorInvalidDevice;
    CUcontext cur = nullptr;
    if (c.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != c.ctx)
        return toHip(c.cuCtxSetCurrent(c.ctx));
    return hipSuccess;
}

#define HONE_HN_READY                                                                              \
    if (const hipError_t hnReady = ready(); hnReady != hipSuccess)                                 \
        return hnReady;

const char* hipName(hipError_t e)
{
    switch (e) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorNotInitialized: return "hipErrorNotInitialized";
    case hipErrorDeinitialized: return "hipErrorDeinitialized";
    case hipErrorNoDevice: return "hipErrorNoDevice";
    case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
    case hipErrorInvalidContext: return "hipErrorInvalidContext";
    case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
    case hipErrorNotFound: return "hipErrorNotFound";
    case hipErrorNotReady: return "hipErrorNotReady";
    case hipErrorIllegalAddress: return "hipErrorIllegalAddress";
    case hipErrorLaunchOutOfResources: return "hipErrorLaunchOutOfResources";
    case hipErrorLaunchTimeOut: return "hipErrorLaunchTimeOut";
    case hipErrorContextIsDestroyed: return "hipErrorContextIsDestroyed";
    case hipErrorAssert: return "hipErrorAssert";
    case hipErrorLaunchFailure: return "hipErrorLaunchFailure";
    case hipErrorNotSupported: return "hipErrorNotSupported";
    case hipErrorStreamCaptureUnsupported: return "hipErrorStreamCaptureUnsupported";
    case hipErrorStreamCaptureInvalidated: return "hipErrorStreamCaptureInvalidated";
    case hipErrorStreamCaptureWrongThread: return "hipErrorStreamCaptureWrongThread";
    default: return "hipErrorUnknown";
    }
}

int attr(CUdevice_attribute a)
{
    int v = 0;
    cu().cuDeviceGetAttribute(&v, a, cu().device);
    return v;
}

} // namespace

// ---- the entry points (AMD signatures; hip_runtime.h's HONE_HIP_FUNCTIONS) ----

hipError_t hipInit(unsigned flags)
{
    Cu& c = cu();
    if (!c.loaded)
        return t_last = hipErrorNoDevice;
    c.initResult = c.cuInit(flags);
    return toHip(c.initResult);
}

hipError_t hipRuntimeGetVersion(int* v)
{
    *v = HIP_VERSION; // the HIP API this library implements (the worker's header)
    return hipSuccess;
}

hipError_t hipDriverGetVersion(int* v)
{
    if (!cu().loaded)
        return t_last = hipErrorNoDevice;
    return toHip(cu().cuDriverGetVersion(v));
}

const char* hipGetErrorName(hipError_t e)
{
    return hipName(e);
}

const char* hipGetErrorString(hipError_t e)
{
    // The CUDA driver's words for the matching CUresult (the enum values agree where mapped).
    const char* s = nullptr;
    if (cu().loaded && e != hipErrorUnknown && cu().cuGetErrorString(static_cast<CUresult>(e), &s) == CUDA_SUCCESS && s)
        return s;
    if (e == hipErrorNoDevice && !cu().loaded)
        return "no NVIDIA driver: cannot load libcuda.so.1 (HIP on NVIDIA needs one)";
    return hipName(e);
}

hipError_t hipGetLastError()
{
    const hipError_t e = t_last;
    t_last = hipSuccess;
    return e;
}

hipError_t hipGetDeviceCount(int* n)
{
    *n = 0;
    Cu& c = cu();
    if (!c.loaded)
        return t_last = hipErrorNoDevice;
    if (c.initResult != CUDA_SUCCESS)
        return toHip(c.initResult);
    return toHip(c.cuDeviceGetCount(n));
}

hipError_t hipSetDevice(int ordinal)
{
    Cu& c = cu();
    if (!c.loaded)
        return t_last = hipErrorNoDevice;
    CUdevice d = 0;
    if (const CUresult r = c.cuDeviceGet(&d, ordinal); r != CUDA_SUCCESS)
        return toHip(r);
    CUcontext ctx = nullptr;
    if (const CUresult r = c.cuDevicePrimaryCtxRetain(&ctx, d); r != CUDA_SUCCESS)
        return toHip(r);
    c.device = d;
    c.ctx = ctx;
    return toHip(c.cuCtxSetCurrent(ctx));
}

hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int ordinal)
{
    Cu& c = cu();
    if (!c.loaded)
        return t_last = hipErrorNoDevice;
    CUdevice d = 0;
    if (const CUresult r = c.cuDeviceGet(&d, ordinal); r != CUDA_SUCCESS)
        return toHip(r);
    std::memset(p, 0, sizeof *p);
    c.cuDeviceGetName(p->name, sizeof p->name, d);
    c.cuDeviceTotalMem(&p->totalGlobalMem, d);
    auto a = [&](CUdevice_attribute what) {
        int v = 0;
        c.cuDeviceGetAttribute(&v, what, d);
        return v;
    };
    p->sharedMemPerBlock = static_cast<size_t>(a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
    p->regsPerBlock = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    p->warpSize = a(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    p->maxThreadsPerBlock = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p->clockRate = a(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    p->memoryClockRate = a(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    p->memoryBusWidth = a(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    p->major = a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    p->minor = a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    p->multiProcessorCount = a(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p->l2CacheSize = a(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    p->maxThreadsPerMultiProcessor = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    p->maxSharedMemoryPerMultiProcessor = static_cast<size_t>(a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
    p->pciDomainID = a(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
    p->pciBusID = a(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
    p->pciDeviceID = a(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
    // Not an AMD GPU: the architecture NVIDIA's way, which the worker's platform mode reads.
    std::snprintf(p->gcnArchName, sizeof p->gcnArchName, "sm_%d%d", p->major, p->minor);
    return hipSuccess;
}

hipError_t hipDeviceGetAttribute(int* v, hipDeviceAttribute_t what, int ordinal)
{
    (void)ordinal;
    HONE_HN_READY
    switch (what) {
    case hipDeviceAttributeMultiprocessorCount: *v = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT); break;
    case hipDeviceAttributeWarpSize: *v = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE); break;
    case hipDeviceAttributeL2CacheSize: *v = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE); break;
    case hipDeviceAttributeMaxThreadsPerBlock: *v = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK); break;
    case hipDeviceAttributeMaxThreadsPerMultiProcessor:
        *v = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
        break;
    case hipDeviceAttributeComputeCapabilityMajor: *v = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR); break;
    case hipDeviceAttributeComputeCapabilityMinor: *v = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR); break;
    default: return t_last = hipErrorNotSupported;
    }
    return hipSuccess;
}

hipError_t hipDeviceSynchronize()
{
    HONE_HN_READY
    return toHip(cu().cuCtxSynchronize());
}

hipError_t hipMalloc(void** p, size_t bytes)
{
    HONE_HN_READY
    CUdeviceptr d = 0;
    const hipError_t e = toHip(cu().cuMemAlloc(&d, bytes));
    *p = e == hipSuccess ? reinterpret_cast<void*>(d) : nullptr;
    return e;
}

hipError_t hipFree(void* p)
{
    HONE_HN_READY
    return p ? toHip(cu().cuMemFree(reinterpret_cast<CUdeviceptr>(p))) : hipSuccess;
}

hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind)
{
    HONE_HN_READY
    // Unified addressing: the driver tells host from device memory.
    return toHip(cu().cuMemcpy(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes));
}

hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t stream)
{
    HONE_HN_READY
    return toHip(cu().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), static_cast<unsigned>(value), count,
        reinterpret_cast<CUstream>(stream)));
}

hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned flags)
{
    HONE_HN_READY
    CUstream cs = nullptr;
    const hipError_t e
        = toHip(cu().cuStreamCreate(&cs, (flags & hipStreamNonBlocking) ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
    *s = reinterpret_cast<hipStream_t>(cs);
    return e;
}

hipError_t hipStreamDestroy(hipStream_t s)
{
    HONE_HN_READY
    return toHip(cu().cuStreamDestroy(reinterpret_cast<CUstream>(s)));
}

hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode)
{
    HONE_HN_READY
    const CUstreamCaptureMode m = mode == hipStreamCaptureModeGlobal ? CU_STREAM_CAPTURE_MODE_GLOBAL
        : mode == hipStreamCaptureModeThreadLocal                    ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                                                     : CU_STREAM_CAPTURE_MODE_RELAXED;
    return toHip(cu().cuStreamBeginCapture(reinterpret_cast<CUstream>(s), m));
}

hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* g)
{
    HONE_HN_READY
    CUgraph cg = nullptr;
    const hipError_t e = toHip(cu().cuStreamEndCapture(reinterpret_cast<CUstream>(s), &cg));
    *g = reinterpret_cast<hipGraph_t>(cg);
    return e;
}

hipError_t hipGraphGetNodes(hipGraph_t g, hipGraphNode_t* nodes, size_t* count)
{
    HONE_HN_READY
    return toHip(cu().cuGraphGetNodes(reinterpret_cast<CUgraph>(g), reinterpret_cast<CUgraphNode*>(nodes), count));
}

hipError_t hipGraphNodeGetType(hipGraphNode_t n, hipGraphNodeType* t)
{
    HONE_HN_READY
    CUgraphNodeType ct {};
    const hipError_t e = toHip(cu().cuGraphNodeGetType(reinterpret_cast<CUgraphNode>(n), &ct));
    *t = ct == CU_GRAPH_NODE_TYPE_KERNEL ? hipGraphNodeTypeKernel : hipGraphNodeTypeEmpty;
    return e;
}

hipError_t hipGraphKernelNodeGetParams(hipGraphNode_t n, hipKernelNodeParams* p)
{
    HONE_HN_READY
    CUDA_KERNEL_NODE_PARAMS k {};
    if (const CUresult r = cu().cuGraphKernelNodeGetParams(reinterpret_cast<CUgraphNode>(n), &k); r != CUDA_SUCCESS)
        return toHip(r);
    CUfunction f = k.func;
    if (!f && k.kern)
        cu().cuKernelGetFunction(&f, k.kern);
    p->func = reinterpret_cast<void*>(f);
    p->gridDim = dim3(k.gridDimX, k.gridDimY, k.gridDimZ);
    p->blockDim = dim3(k.blockDimX, k.blockDimY, k.blockDimZ);
    p->sharedMemBytes = k.sharedMemBytes;
    p->kernelParams = k.kernelParams;
    p->extra = k.extra;
    return hipSuccess;
}

hipError_t hipGraphDestroy(hipGraph_t g)
{
    HONE_HN_READY
    return toHip(cu().cuGraphDestroy(reinterpret_cast<CUgraph>(g)));
}

hipError_t hipFuncGetAttributes(hipFuncAttributes* a, const void* func)
{
    HONE_HN_READY
    CUfunction f = reinterpret_cast<CUfunction>(const_cast<void*>(func));
    auto get = [&](CUfunction_attribute what) {
        int v = 0;
        cu().cuFuncGetAttribute(&v, what, f);
        return v;
    };
    std::memset(a, 0, sizeof *a);
    a->numRegs = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
    a->sharedSizeBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
    a->localSizeBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
    a->constSizeBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
    a->maxThreadsPerBlock = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    a->maxDynamicSharedSizeBytes = get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
    a->ptxVersion = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
    a->binaryVersion = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
    return hipSuccess;
}

hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func, int block, size_t dynSmem)
{
    HONE_HN_READY
    return toHip(cu().cuOccupancyMaxActiveBlocksPerMultiprocessor(
        blocks, reinterpret_cast<CUfunction>(const_cast<void*>(func)), block, dynSmem));
}

hipError_t hipEventCreate(hipEvent_t* e)
{
    HONE_HN_READY
    CUevent ce = nullptr;
    const hipError_t r = toHip(cu().cuEventCreate(&ce, CU_EVENT_DEFAULT));
    *e = reinterpret_cast<hipEvent_t>(ce);
    return r;
}

hipError_t hipEventDestroy(hipEvent_t e)
{
    HONE_HN_READY
    return toHip(cu().cuEventDestroy(reinterpret_cast<CUevent>(e)));
}

hipError_t hipEventRecord(hipEvent_t e, hipStream_t s)
{
    HONE_HN_READY
    return toHip(cu().cuEventRecord(reinterpret_cast<CUevent>(e), reinterpret_cast<CUstream>(s)));
}

hipError_t hipEventSynchronize(hipEvent_t e)
{
    HONE_HN_READY
    return toHip(cu().cuEventSynchronize(reinterpret_cast<CUevent>(e)));
}

hipError_t hipEventQuery(hipEvent_t e)
{
    HONE_HN_READY
    const CUresult r = cu().cuEventQuery(reinterpret_cast<CUevent>(e));
    return r == CUDA_ERROR_NOT_READY ? hipErrorNotReady : toHip(r);
}

hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b)
{
    HONE_HN_READY
    return toHip(cu().cuEventElapsedTime(ms, reinterpret_cast<CUevent>(a), reinterpret_cast<CUevent>(b)));
}
