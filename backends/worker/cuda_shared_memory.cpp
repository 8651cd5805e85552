// Device memory shared between the judge and a CUDA runner: the judge allocates with the
// driver's virtual memory API and exports each allocation as a POSIX file descriptor; the runner
// (another process, in its own context and sandbox) imports the descriptor and maps it. A
// descriptor is a capability: a runner maps exactly the buffers it was sent, and nothing names
// the judge's other allocations (legacy cuIpc handles are bytes that could be guessed).
#include "cuda_backend.h"

#include "cuda_driver.h"

#include <unistd.h>

#include <cstdint>
#include <new>
#include <stdexcept>

namespace hone::backends {

namespace {

CUmemAllocationProp sharedProp(CUdevice device)
{
    CUmemAllocationProp prop {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
}

} // namespace

void* CudaBackend::allocateShared(size_t bytes, int& fd)
{
    fd = -1;
    ensureContext();
    cuda::Driver& d = *m_driver;
    CUmemAllocationProp prop = sharedProp(m_device);
    size_t granularity = 0;
    check(d.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
    const size_t size = (std::max<size_t>(bytes, 1) + granularity - 1) / granularity * granularity;
    CUmemGenericAllocationHandle handle = 0;
    const CUresult created = d.cuMemCreate(&handle, size, &prop, 0);
    if (created == CUDA_ERROR_OUT_OF_MEMORY)
        throw std::bad_alloc();
    check(created, "cuMemCreate (a buffer shared with a runner)");
    CUdeviceptr p = 0;
    CUresult r = d.cuMemAddressReserve(&p, size, granularity, 0, 0);
    if (r == CUDA_SUCCESS) {
        r = d.cuMemMap(p, size, 0, handle, 0);
        if (r != CUDA_SUCCESS)
            d.cuMemAddressFree(p, size);
    }
    if (r != CUDA_SUCCESS) {
        d.cuMemRelease(handle);
        check(r, "cuMemMap (a buffer shared with a runner)");
    }
    CUmemAccessDesc access {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    int exported = -1;
    r = d.cuMemSetAccess(p, size, &access, 1);
    if (r == CUDA_SUCCESS)
        r = d.cuMemExportToShareableHandle(&exported, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r != CUDA_SUCCESS) {
        d.cuMemUnmap(p, size);
        d.cuMemAddressFree(p, size);
        d.cuMemRelease(handle);
        check(r, "exporting a buffer for a runner");
    }
    m_shared[p] = SharedMapping { size, handle };
    fd = exported;
    return reinterpret_cast<void*>(p);
}

void CudaBackend::releaseShared(void* p) noexcept
{
    auto it = m_shared.find(reinterpret_cast<CUdeviceptr>(p));
    if (it == m_shared.end())
        return;
    if (m_ctx && !m_lost) {
        cuda::Driver& d = *m_driver;
        d.cuMemUnmap(it->first, it->second.bytes);
        d.cuMemAddressFree(it->first, it->second.bytes);
        d.cuMemRelease(it->second.handle);
    }
    m_shared.erase(it);
}

void* CudaBackend::importShared(int fd, size_t bytes)
{
    try {
        ensureContext();
    } catch (...) {
        ::close(fd);
        throw;
    }
    cuda::Driver& d = *m_driver;
    CUmemGenericAllocationHandle handle = 0;
    const CUresult imported = d.cuMemImportFromShareableHandle(
        &handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ::close(fd);
    check(imported, "cuMemImportFromShareableHandle (a buffer of the worker)");
    CUmemAllocationProp prop = sharedProp(m_device);
    size_t granularity = 0;
    CUresult r = d.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    const size_t size = granularity ? (std::max<size_t>(bytes, 1) + granularity - 1) / granularity * granularity : 0;
    CUdeviceptr p = 0;
    if (r == CUDA_SUCCESS)
        r = d.cuMemAddressReserve(&p, size, granularity, 0, 0);
    if (r == CUDA_SUCCESS) {
        r = d.cuMemMap(p, size, 0, handle, 0);
        if (r != CUDA_SUCCESS)
            d.cuMemAddressFree(p, size);
    }
    // The mapping holds the memory; the handle is not needed past it.
    d.cuMemRelease(handle);
    check(r, "mapping a buffer of the worker");
    CUmemAccessDesc access {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = d.cuMemSetAccess(p, size, &access, 1);
    if (r != CUDA_SUCCESS) {
        d.cuMemUnmap(p, size);
        d.cuMemAddressFree(p, size);
        check(r, "cuMemSetAccess (a buffer of the worker)");
    }
    m_shared[p] = SharedMapping { size, 0 };
    return reinterpret_cast<void*>(p);
}

void CudaBackend::releaseImported(void* p) noexcept
{
    auto it = m_shared.find(reinterpret_cast<CUdeviceptr>(p));
    if (it == m_shared.end())
        return;
    if (m_ctx && !m_lost) {
        cuda::Driver& d = *m_driver;
        // Work still queued on the buffer must finish before its mapping goes.
        d.cuCtxSynchronize();
        d.cuMemUnmap(it->first, it->second.bytes);
        d.cuMemAddressFree(it->first, it->second.bytes);
    }
    m_shared.erase(it);
}

} // namespace hone::backends
