/* check-call-graph's self-test: the way back from cycle_second to cycle_first is a variable. */
extern int cycle_first_count;
int cycle_second_work(int value);
int cycle_second_work(int value)
{
    return value + cycle_first_count;
}
