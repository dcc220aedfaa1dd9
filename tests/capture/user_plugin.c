/*
 * user_plugin.c — libotfx-test-plugin.so, built with -finstrument-functions and dlopen'ed by
 * dlopen_functions.c after MPI_Init: its functions must still get their names on the place.
 */
double plugin_work(int n);

static double plugin_leaf(int i)
{
    return (double)i * 0.5;
}

double plugin_work(int n)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += plugin_leaf(i);
    return sum;
}
