#include <hone/kernel.h>
extern "C" int hone_run(const hone_args* args)
{
    volatile int64_t spin = 0;
    while (args->num_inputs > 0)
        spin = spin + 1;
    return 0;
}
