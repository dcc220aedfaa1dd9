/* check-call-graph's self-test: a module outside the cycle, called by it. */
int cycle_leaf_work(int value);
int cycle_leaf_work(int value)
{
    return value;
}
