/* check-call-graph's self-test: cycle_first calls cycle_second, which reads cycle_first's variable. */
int cycle_second_work(int value);
int cycle_first_count;
int cycle_first_work(int value);
int cycle_first_work(int value)
{
    return cycle_second_work(value) + 1;
}
