/*
 * dlopen_functions.c — loads an instrumented library (argv[1]) after MPI_Init and calls it often
 * enough to fill several batches: the capture library notices the new object at a batch boundary and
 * sends the load map again, so the place names the library's functions (plugin_work, plugin_leaf).
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

enum { CALLS = 20000 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    void *plugin = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
    double (*work)(int) = NULL;
    if (plugin)
        *(void **)&work = dlsym(plugin, "plugin_work");
    if (!work) {
        fprintf(stderr, "dlopen-functions: cannot load plugin_work from %s: %s\n",
                argc > 1 ? argv[1] : "(none)", dlerror());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double sum = 0.0;
    for (int i = 0; i < CALLS; i++)
        sum += work(2);
    printf("dlopen-functions: rank %d sum %.1f\n", rank, sum);
    printf("expected-calls: %d MPI_Comm_rank=1 MPI_Finalize=1 MPI_Init=1\n", rank);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
