// Host cost of evaluating a big shape (issue 19): drawing a 256 MiB input on one thread and on
// all of them (HostTensor::fill, whose bytes do not depend on the split), and hashing it the way
// the worker's cache checks every entry it reads (SHA-256).
//
//   bench_inputs --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

#include "core/sha256.h"
#include "tensors.h"

#include <benchmark/benchmark.h>

namespace {

using namespace hone::backends;

constexpr int64_t kBytes = int64_t(256) << 20;

HostTensor tensor(const char* dtype, const char* init)
{
    TensorDesc d;
    d.name = "x";
    d.dtype = dtypeFromName(dtype);
    d.shape = { kBytes / static_cast<int64_t>(dtypeSize(d.dtype)) };
    d.init = nlohmann::json::parse(init);
    return HostTensor(d);
}

/// range(0): threads (0: all of hostThreads()).
void drawInputs(benchmark::State& state, const char* dtype, const char* init)
{
    HostTensor t = tensor(dtype, init);
    const size_t threads = state.range(0) == 0 ? hostThreads() : static_cast<size_t>(state.range(0));
    for (auto _ : state) {
        t.fill(1, "bench[0]", 0, threads);
        benchmark::DoNotOptimize(t.data());
    }
    state.counters["threads"] = static_cast<double>(threads);
    state.SetBytesProcessed(state.iterations() * kBytes);
}

void sha256(benchmark::State& state)
{
    HostTensor t = tensor("f32", R"({"dist": "uniform"})");
    t.fill(1, "bench[0]", 0);
    for (auto _ : state) {
        hone::core::Sha256 h;
        h.update(t.data(), t.bytes());
        benchmark::DoNotOptimize(h.hexDigest());
    }
    state.SetBytesProcessed(state.iterations() * kBytes);
}

} // namespace

BENCHMARK_CAPTURE(drawInputs, f32_normal, "f32", R"({"dist": "normal", "mean": 1.0, "std": 0.2})")
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK_CAPTURE(drawInputs, bf16_normal, "bf16", R"({"dist": "normal"})")
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK_CAPTURE(drawInputs, f32_uniform, "f32", R"({"dist": "uniform", "low": -1, "high": 1})")
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK_CAPTURE(drawInputs, i32_randint, "i32", R"({"dist": "randint", "low": 0, "high": 1000000})")
    ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(sha256)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();

BENCHMARK_MAIN();
