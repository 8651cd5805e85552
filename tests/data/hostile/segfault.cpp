#include <hone/kernel.h>
extern "C" int hone_run(const hone_args* args)
{
    volatile float* p = nullptr;
    p[args->num_inputs] = 1.0f; // writes through a null pointer
    return 0;
}
