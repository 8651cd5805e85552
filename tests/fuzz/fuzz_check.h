#pragma once

#include <cstdio>
#include <cstdlib>

/// A property of the parser under fuzzing that must hold for every input. A broken one aborts,
/// so libFuzzer keeps the input as a crash (docs/THREAT_MODEL.md, "Fuzzing and sanitizers").
#define HONE_FUZZ_CHECK(cond, what)                                                                          \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            std::fprintf(stderr, "hone fuzz: property broken: %s (%s:%d)\n", what, __FILE__, __LINE__);      \
            std::abort();                                                                                    \
        }                                                                                                    \
    } while (0)
