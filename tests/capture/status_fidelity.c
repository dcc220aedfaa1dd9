/*
 * status_fidelity.c — prints everything MPI returns or writes for every status-returning call, so that a
 * run under otfx can be compared byte for byte with an untraced one (check-fidelity).
 *
 * Plain MPI, no otfx API, on exactly 4 ranks. Before each call the statuses are filled with a sentinel
 * pattern; afterwards each rank notes the return code's class, every public status field (MPI_SOURCE,
 * MPI_TAG, MPI_ERROR: its class, or "S" while it still holds the sentinel), MPI_Get_count,
 * MPI_Get_elements(_x), MPI_Test_cancelled, flags, indices, outcounts, whether request and message
 * handles are null afterwards, and a hash of the receive buffers. Error codes are compared by class:
 * MPICH encodes the call stack that raised an error into the code, so the same error raised through
 * another (equally correct) path has another code but the same class.
 *
 * Covered: blocking and nonblocking receives with specific and wildcard source and tag, MPI_Sendrecv and
 * MPI_Sendrecv_replace (and _c), MPI_PROC_NULL peers, truncation with MPI_ERRORS_RETURN set on
 * MPI_COMM_WORLD (Recv, Wait, Waitall with statuses and with MPI_STATUSES_IGNORE, Testall, Waitsome,
 * Testsome, Sendrecv, Sendrecv_replace), probes and matched probes (MPI_MESSAGE_NO_PROC too), the Wait and
 * Test families with null and inactive requests, persistent point-to-point and collective requests,
 * cancelled receives, generalized requests (with the number of query calls), derived types (Get_count
 * undefined, Get_elements not), the application's own MPI_Isendrecv(_replace), reductions whose result
 * depends on the order of application (doubles, signed zeros, MINLOC on doubles: the bits are printed),
 * reductions that do not, user-defined operations that count their calls, and the data-moving collectives.
 * Status fields MPI leaves undefined (collective requests, cancelled receives) or MPICH leaves unfilled
 * (MPI_Isendrecv) are not printed (error_field says why).
 *
 * Each rank collects its lines; rank 0 gathers and prints them in rank order (deterministic output).
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RANKS = 4, SENTINEL_BYTE = 0x5b };
static const int sentinel = 0x5b5b5b5b;

static int rank, left, right, partner;
static MPI_Comm comm;

/* ---- output --------------------------------------------------------------------------------------- */

static char *text;
static size_t text_used, text_size;

__attribute__((format(printf, 1, 2))) static void note(const char *format, ...)
{
    if (!text) {
        text_size = 1 << 16;
        text = malloc(text_size);
        if (!text)
            abort();
    }
    for (;;) {
        va_list arguments;
        va_start(arguments, format);
        const int n = vsnprintf(text + text_used, text_size - text_used, format, arguments);
        va_end(arguments);
        if (n >= 0 && text_used + (size_t)n < text_size) {
            text_used += (size_t)n;
            return;
        }
        text_size = text_size * 2 + (size_t)(n > 0 ? n : 0) + 4096;
        text = realloc(text, text_size);
        if (!text)
            abort();
    }
}

static uint64_t hash_bytes(const void *data, size_t bytes)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ ((const unsigned char *)data)[i]) * 1099511628211ull;
    return h;
}

static void class_text(char *out, size_t size, int code)
{
    if (code == MPI_SUCCESS) {
        snprintf(out, size, "0");
        return;
    }
    int error_class = -1;
    if (MPI_Error_class(code, &error_class) != MPI_SUCCESS)
        snprintf(out, size, "?");
    else
        snprintf(out, size, "c%d", error_class);
}

static void fill(void *status, size_t bytes)
{
    memset(status, SENTINEL_BYTE, bytes);
}

/* One status: its public fields and what MPI derives from it for `type`. */
static void status_fields(const MPI_Status *status, MPI_Datatype type)
{
    char error[16];
    if (status->MPI_ERROR == sentinel)
        snprintf(error, sizeof(error), "S");
    else
        class_text(error, sizeof(error), status->MPI_ERROR);
    int count = -7, elements = -7, cancelled = -7;
    MPI_Count elements_x = -7, count_c = -7;
    const int rc_count = MPI_Get_count(status, type, &count);
    const int rc_elements = MPI_Get_elements(status, type, &elements);
    MPI_Get_elements_x(status, type, &elements_x);
    MPI_Get_count_c(status, type, &count_c);
    MPI_Test_cancelled(status, &cancelled);
    note(" src=%d tag=%d err=%s count=%d%s elements=%d%s elements_x=%lld count_c=%lld cancelled=%d",
         status->MPI_SOURCE, status->MPI_TAG, error, count, rc_count ? "!" : "", elements,
         rc_elements ? "!" : "", (long long)elements_x, (long long)count_c, cancelled);
}

/* A status whose source, tag and count MPI leaves undefined (collective requests, cancelled receives) or
 * MPICH 4.0.2 leaves unfilled (MPI_Isendrecv): MPICH leaves there what an earlier request left in the
 * request object, which depends on which objects MPICH reused, so not comparable between runs. Only
 * MPI_ERROR and the cancelled flag are shown. */
static void error_field(const MPI_Status *status)
{
    char error[16];
    if (status->MPI_ERROR == sentinel)
        snprintf(error, sizeof(error), "S");
    else
        class_text(error, sizeof(error), status->MPI_ERROR);
    int cancelled = -7;
    MPI_Test_cancelled(status, &cancelled);
    note(" err=%s cancelled=%d", error, cancelled);
}

static void result(const char *what, int rc)
{
    char code[16];
    class_text(code, sizeof(code), rc);
    note("r%d %s rc=%s", rank, what, code);
}

static void show(const char *what, int rc, const MPI_Status *status, MPI_Datatype type, const void *buffer,
                 size_t bytes)
{
    result(what, rc);
    if (status)
        status_fields(status, type);
    if (buffer)
        note(" buf=%016llx", (unsigned long long)hash_bytes(buffer, bytes));
    note("\n");
}

static const char *null_or_set(MPI_Request request)
{
    return request == MPI_REQUEST_NULL ? "null" : "set";
}

static void fill_ints(int *buffer, int count, int seed)
{
    for (int i = 0; i < count; i++)
        buffer[i] = seed * 1000 + i;
}

/* ---- point-to-point ------------------------------------------------------------------------------- */

static void blocking_receives(void)
{
    int send[16] = {0}, receive[16] = {0};
    MPI_Status status;
    /* Even ranks send 5 ints to their partner, which receives them by source and tag; then 3 back,
     * received with MPI_ANY_SOURCE/MPI_ANY_TAG into a larger buffer. */
    if (rank % 2 == 0) {
        fill_ints(send, 5, rank);
        MPI_Send(send, 5, MPI_INT, partner, 11, comm);
        fill(&status, sizeof(status));
        memset(receive, 0, sizeof(receive));
        const int rc = MPI_Recv(receive, 16, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &status);
        show("recv_any", rc, &status, MPI_INT, receive, sizeof(receive));
    } else {
        fill(&status, sizeof(status));
        memset(receive, 0, sizeof(receive));
        const int rc = MPI_Recv(receive, 16, MPI_INT, partner, 11, comm, &status);
        show("recv_specific", rc, &status, MPI_INT, receive, sizeof(receive));
        fill_ints(send, 3, rank);
        MPI_Send(send, 3, MPI_INT, partner, 12, comm);
    }
    /* MPI_STATUS_IGNORE, and the synchronous, buffered and ready sends. */
    if (rank % 2 == 0) {
        fill_ints(send, 4, rank + 10);
        show("ssend", MPI_Ssend(send, 4, MPI_INT, partner, 13, comm), NULL, MPI_INT, NULL, 0);
        static char attached[1024];
        MPI_Buffer_attach(attached, sizeof(attached));
        show("bsend", MPI_Bsend(send, 4, MPI_INT, partner, 14, comm), NULL, MPI_INT, NULL, 0);
        void *detached;
        int detached_size;
        MPI_Buffer_detach(&detached, &detached_size);
        MPI_Barrier(comm); /* the partner's receive for the ready send is posted */
        show("rsend", MPI_Rsend(send, 4, MPI_INT, partner, 15, comm), NULL, MPI_INT, NULL, 0);
    } else {
        memset(receive, 0, sizeof(receive));
        const int rc = MPI_Recv(receive, 16, MPI_INT, partner, 13, comm, MPI_STATUS_IGNORE);
        show("recv_ignore", rc, NULL, MPI_INT, receive, sizeof(receive));
        fill(&status, sizeof(status));
        show("recv_bsend", MPI_Recv(receive, 16, MPI_INT, partner, 14, comm, &status), &status, MPI_INT,
             receive, sizeof(receive));
        MPI_Request request;
        MPI_Irecv(receive, 16, MPI_INT, partner, 15, comm, &request);
        MPI_Barrier(comm);
        fill(&status, sizeof(status));
        show("wait_rsend", MPI_Wait(&request, &status), &status, MPI_INT, receive, sizeof(receive));
    }
    /* From MPI_PROC_NULL. */
    fill(&status, sizeof(status));
    show("recv_proc_null", MPI_Recv(receive, 16, MPI_INT, MPI_PROC_NULL, 17, comm, &status), &status, MPI_INT,
         NULL, 0);
    fill(&status, sizeof(status));
    show("recv_c_proc_null", MPI_Recv_c(receive, 16, MPI_INT, MPI_PROC_NULL, 17, comm, &status), &status,
         MPI_INT, NULL, 0);
    show("send_proc_null", MPI_Send(send, 4, MPI_INT, MPI_PROC_NULL, 18, comm), NULL, MPI_INT, NULL, 0);
    show("ssend_proc_null", MPI_Ssend(send, 4, MPI_INT, MPI_PROC_NULL, 18, comm), NULL, MPI_INT, NULL, 0);
    /* Large-count receive. */
    if (rank % 2 == 0) {
        fill_ints(send, 7, rank + 20);
        MPI_Send_c(send, 7, MPI_INT, partner, 16, comm);
    } else {
        fill(&status, sizeof(status));
        memset(receive, 0, sizeof(receive));
        show("recv_c", MPI_Recv_c(receive, 16, MPI_INT, MPI_ANY_SOURCE, 16, comm, &status), &status, MPI_INT,
             receive, sizeof(receive));
    }
}

static void nonblocking_receives(void)
{
    int send[16] = {0}, receive[16] = {0};
    MPI_Status status;
    MPI_Request request;
    if (rank % 2 == 1) {
        memset(receive, 0, sizeof(receive));
        MPI_Irecv(receive, 16, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &request);
        MPI_Barrier(comm);
        fill(&status, sizeof(status));
        const int rc = MPI_Wait(&request, &status);
        show("irecv_wait_any", rc, &status, MPI_INT, receive, sizeof(receive));
        note("r%d irecv_wait_any request=%s\n", rank, null_or_set(request));
        MPI_Irecv(receive, 16, MPI_INT, partner, 22, comm, &request);
        show("irecv_wait_ignore", MPI_Wait(&request, MPI_STATUS_IGNORE), NULL, MPI_INT, receive,
             sizeof(receive));
    } else {
        MPI_Barrier(comm);
        fill_ints(send, 6, rank);
        MPI_Send(send, 6, MPI_INT, partner, 21, comm);
        fill_ints(send, 2, rank + 1);
        MPI_Send(send, 2, MPI_INT, partner, 22, comm);
    }
    /* MPI_Wait on MPI_REQUEST_NULL: an empty status. */
    request = MPI_REQUEST_NULL;
    fill(&status, sizeof(status));
    show("wait_null", MPI_Wait(&request, &status), &status, MPI_INT, NULL, 0);
}

static void sendrecv(void)
{
    int send[16] = {0}, receive[16] = {0};
    MPI_Status status;
    /* A ring: 4 + rank ints to the right with tag 20 + rank, from the left with wildcards. */
    fill_ints(send, 4 + rank, rank);
    memset(receive, 0, sizeof(receive));
    fill(&status, sizeof(status));
    int rc = MPI_Sendrecv(send, 4 + rank, MPI_INT, right, 20 + rank, receive, 16, MPI_INT, MPI_ANY_SOURCE,
                          MPI_ANY_TAG, comm, &status);
    show("sendrecv_any", rc, &status, MPI_INT, receive, sizeof(receive));

    memset(receive, 0, sizeof(receive));
    fill(&status, sizeof(status));
    rc = MPI_Sendrecv(send, 4 + rank, MPI_INT, right, 30 + rank, receive, 16, MPI_INT, left, 30 + left, comm,
                      &status);
    show("sendrecv_specific", rc, &status, MPI_INT, receive, sizeof(receive));

    memset(receive, 0, sizeof(receive));
    rc = MPI_Sendrecv(send, 2, MPI_INT, right, 40, receive, 16, MPI_INT, left, 40, comm, MPI_STATUS_IGNORE);
    show("sendrecv_ignore", rc, NULL, MPI_INT, receive, sizeof(receive));

    /* MPI_PROC_NULL at both ends, then a chain that starts and ends with MPI_PROC_NULL. */
    fill(&status, sizeof(status));
    rc = MPI_Sendrecv(send, 2, MPI_INT, MPI_PROC_NULL, 41, receive, 16, MPI_INT, MPI_PROC_NULL, 41, comm,
                      &status);
    show("sendrecv_proc_null", rc, &status, MPI_INT, NULL, 0);
    const int next = rank + 1 < RANKS ? rank + 1 : MPI_PROC_NULL;
    const int previous = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    memset(receive, 0, sizeof(receive));
    fill(&status, sizeof(status));
    rc = MPI_Sendrecv(send, 3, MPI_INT, next, 42, receive, 16, MPI_INT, previous, MPI_ANY_TAG, comm, &status);
    show("sendrecv_chain", rc, &status, MPI_INT, receive, sizeof(receive));

    /* Sendrecv_replace: the ring and the chain. */
    int buffer[16] = {0};
    fill_ints(buffer, 8, rank + 50);
    fill(&status, sizeof(status));
    rc = MPI_Sendrecv_replace(buffer, 8, MPI_INT, right, 50 + rank, MPI_ANY_SOURCE, MPI_ANY_TAG, comm,
                              &status);
    show("sendrecv_replace_any", rc, &status, MPI_INT, buffer, sizeof(buffer));
    fill(&status, sizeof(status));
    rc = MPI_Sendrecv_replace(buffer, 8, MPI_INT, next, 51, previous, 51, comm, &status);
    show("sendrecv_replace_chain", rc, &status, MPI_INT, buffer, sizeof(buffer));
    rc = MPI_Sendrecv_replace(buffer, 8, MPI_INT, right, 52, left, 52, comm, MPI_STATUS_IGNORE);
    show("sendrecv_replace_ignore", rc, NULL, MPI_INT, buffer, sizeof(buffer));

    /* Large-count forms. */
    memset(receive, 0, sizeof(receive));
    fill(&status, sizeof(status));
    rc = MPI_Sendrecv_c(send, 4 + rank, MPI_INT, right, 60 + rank, receive, 16, MPI_INT, MPI_ANY_SOURCE,
                        MPI_ANY_TAG, comm, &status);
    show("sendrecv_c", rc, &status, MPI_INT, receive, sizeof(receive));
    fill(&status, sizeof(status));
    rc = MPI_Sendrecv_replace_c(buffer, 8, MPI_INT, right, 61, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &status);
    show("sendrecv_replace_c", rc, &status, MPI_INT, buffer, sizeof(buffer));

    /* The application's own MPI_Isendrecv: MPICH 4.0.2 leaves its status unfilled; traced, it must be
     * left exactly as unfilled. */
    MPI_Request request;
    memset(receive, 0, sizeof(receive));
    MPI_Isendrecv(send, 3, MPI_INT, right, 62, receive, 16, MPI_INT, left, 62, comm, &request);
    fill(&status, sizeof(status));
    result("isendrecv_wait", MPI_Wait(&request, &status));
    error_field(&status);
    note(" buf=%016llx\n", (unsigned long long)hash_bytes(receive, sizeof(receive)));
    fill_ints(buffer, 8, rank + 60);
    MPI_Isendrecv_replace(buffer, 8, MPI_INT, right, 63, left, 63, comm, &request);
    fill(&status, sizeof(status));
    result("isendrecv_replace_wait", MPI_Wait(&request, &status));
    error_field(&status);
    note(" buf=%016llx\n", (unsigned long long)hash_bytes(buffer, sizeof(buffer)));
}

static void derived_types(void)
{
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int send[16] = {0}, receive[16] = {0};
    MPI_Status status;
    /* 3 ints arrive where pairs are expected: MPI_Get_count is MPI_UNDEFINED, MPI_Get_elements 3. */
    fill_ints(send, 3, rank);
    memset(receive, 0, sizeof(receive));
    fill(&status, sizeof(status));
    int rc = MPI_Sendrecv(send, 3, MPI_INT, right, 70, receive, 4, pair, left, 70, comm, &status);
    show("sendrecv_pairs", rc, &status, pair, receive, sizeof(receive));
    if (rank % 2 == 0) {
        MPI_Send(send, 5, MPI_INT, partner, 71, comm);
    } else {
        fill(&status, sizeof(status));
        rc = MPI_Recv(receive, 8, pair, partner, 71, comm, &status);
        show("recv_pairs", rc, &status, pair, receive, sizeof(receive));
    }
    MPI_Type_free(&pair);
}

static void statuses_line(const char *what, int count, const MPI_Status *statuses,
                          const MPI_Request *requests)
{
    for (int i = 0; i < count; i++) {
        note("r%d %s[%d] request=%s", rank, what, i, null_or_set(requests[i]));
        status_fields(&statuses[i], MPI_INT);
        note("\n");
    }
}

static void truncation(void)
{
    int send[16] = {0}, receive[16] = {0};
    MPI_Status status, statuses[2];
    MPI_Request requests[2];
    fill_ints(send, 10, rank);
    if (rank % 2 == 0) {
        for (int tag = 80; tag <= 84; tag++)
            MPI_Send(send, tag == 83 ? 2 : 10, MPI_INT, partner, tag, comm);
        MPI_Send(send, 2, MPI_INT, partner, 85, comm);
        MPI_Send(send, 10, MPI_INT, partner, 86, comm);
        MPI_Send(send, 10, MPI_INT, partner, 89, comm);
        MPI_Send(send, 2, MPI_INT, partner, 90, comm);
        MPI_Send(send, 10, MPI_INT, partner, 91, comm);
        for (int tag = 300; tag < 310; tag++) /* even tags truncated */
            MPI_Send(send, tag % 2 ? 2 : 10, MPI_INT, partner, tag, comm);
    } else {
        memset(receive, 0, sizeof(receive));
        fill(&status, sizeof(status));
        show("recv_truncated", MPI_Recv(receive, 4, MPI_INT, partner, 80, comm, &status), &status, MPI_INT,
             receive, sizeof(receive));
        MPI_Request request;
        MPI_Irecv(receive, 4, MPI_INT, partner, 81, comm, &request);
        fill(&status, sizeof(status));
        show("wait_truncated", MPI_Wait(&request, &status), &status, MPI_INT, receive, sizeof(receive));
        note("r%d wait_truncated request=%s\n", rank, null_or_set(request));
        MPI_Irecv(receive, 4, MPI_INT, partner, 82, comm, &request);
        show("wait_truncated_ignore", MPI_Wait(&request, MPI_STATUS_IGNORE), NULL, MPI_INT, receive,
             sizeof(receive));
        /* Waitall with the truncated receive first and last: MPI_ERR_IN_STATUS, and MPICH leaves the
         * requests after a failed one pending (MPI_ERR_PENDING, handle kept). */
        for (int order = 0; order < 3; order++) {
            int small[4], large[16];
            memset(small, 0, sizeof(small));
            memset(large, 0, sizeof(large));
            /* Order 2: MPI_STATUSES_IGNORE (the recording wrapper completes into statuses of its own). */
            const int truncated = order == 1 ? 1 : 0;
            static const int small_tag[] = {84, 86, 89}, large_tag[] = {83, 85, 90};
            MPI_Irecv(small, 4, MPI_INT, partner, small_tag[order], comm, &requests[truncated]);
            MPI_Irecv(large, 16, MPI_INT, partner, large_tag[order], comm, &requests[1 - truncated]);
            fill(statuses, sizeof(statuses));
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow" /* gcc 12 takes MPICH's (MPI_Status *)2 for a buffer */
#endif
            const int rc = MPI_Waitall(2, requests, order == 2 ? MPI_STATUSES_IGNORE : statuses);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
            char what[64];
            snprintf(what, sizeof(what), "waitall_truncated_%d", order);
            result(what, rc);
            note("\n");
            for (int i = 0; i < 2; i++) {
                note("r%d %s[%d] request=%s", rank, what, i, null_or_set(requests[i]));
                if (order < 2)
                    status_fields(&statuses[i], MPI_INT);
                note("\n");
            }
            for (int i = 0; i < 2; i++)
                if (requests[i] != MPI_REQUEST_NULL) {
                    fill(&status, sizeof(status));
                    snprintf(what, sizeof(what), "waitall_truncated_%d_rewait[%d]", order, i);
                    show(what, MPI_Wait(&requests[i], &status), &status, MPI_INT, NULL, 0);
                }
            note("r%d waitall_truncated_%d buffers=%016llx %016llx\n", rank, order,
                 (unsigned long long)hash_bytes(small, sizeof(small)),
                 (unsigned long long)hash_bytes(large, sizeof(large)));
        }
    }
    if (rank % 2 == 1) {
        /* MPI_Testall with a truncated receive among completed ones. */
        int small[4] = {0};
        MPI_Irecv(small, 4, MPI_INT, partner, 91, comm, &requests[0]);
        requests[1] = MPI_REQUEST_NULL;
        for (int flag = 0; !flag;)
            MPI_Request_get_status(requests[0], &flag, MPI_STATUS_IGNORE);
        int flag = -7;
        fill(statuses, sizeof(statuses));
        result("testall_truncated", MPI_Testall(2, requests, &flag, statuses));
        note(" flag=%d\n", flag);
        statuses_line("testall_truncated", 2, statuses, requests);
        /* Testall, Waitsome, Testsome with MPI_STATUSES_IGNORE (the recording wrappers complete into
         * statuses of their own) and a truncated receive first. */
        static const char *const ignoring[] = {"testall_truncated_ignore", "waitsome_truncated_ignore",
                                               "testsome_truncated_ignore", "waitany_truncated",
                                               "waitsome_truncated"};
        for (int form = 0; form < 5; form++) {
            int large[16] = {0}, indices[2] = {-7, -7}, outcount = -7;
            MPI_Irecv(small, 4, MPI_INT, partner, 300 + 2 * form, comm, &requests[0]);
            MPI_Irecv(large, 16, MPI_INT, partner, 301 + 2 * form, comm, &requests[1]);
            for (int i = 0; i < 2; i++)
                for (int done = 0; !done;)
                    MPI_Request_get_status(requests[i], &done, MPI_STATUS_IGNORE);
            flag = -7;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow" /* gcc 12 takes MPICH's (MPI_Status *)1 for a buffer */
#endif
            fill(statuses, sizeof(statuses));
            const int rc = form == 0   ? MPI_Testall(2, requests, &flag, MPI_STATUSES_IGNORE)
                           : form == 1 ? MPI_Waitsome(2, requests, &outcount, indices, MPI_STATUSES_IGNORE)
                           : form == 2 ? MPI_Testsome(2, requests, &outcount, indices, MPI_STATUSES_IGNORE)
                           : form == 3 ? MPI_Waitany(2, requests, &indices[0], &statuses[0])
                                       : MPI_Waitsome(2, requests, &outcount, indices, statuses);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
            result(ignoring[form], rc);
            if (form >= 3)
                for (int i = 0; i < (form == 3 ? 1 : 2); i++)
                    status_fields(&statuses[i], MPI_INT);
            note(" flag=%d outcount=%d indices=%d,%d requests=%s,%s buffers=%016llx %016llx\n", flag,
                 outcount, indices[0], indices[1], null_or_set(requests[0]), null_or_set(requests[1]),
                 (unsigned long long)hash_bytes(small, sizeof(small)),
                 (unsigned long long)hash_bytes(large, sizeof(large)));
            for (int i = 0; i < 2; i++)
                if (requests[i] != MPI_REQUEST_NULL)
                    MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
        }
    }
    /* Sendrecv and Sendrecv_replace into a receive too small (rank 0 gets 7 ints into 4 from rank 3). */
    memset(receive, 0, sizeof(receive));
    fill(&status, sizeof(status));
    int rc =
        MPI_Sendrecv(send, 10, MPI_INT, right, 87, receive, 4 + rank % 2, MPI_INT, left, 87, comm, &status);
    show("sendrecv_truncated", rc, &status, MPI_INT, receive, sizeof(receive));
    int buffer[16] = {0};
    fill_ints(buffer, 4 + rank, rank + 5);
    fill(&status, sizeof(status));
    rc = MPI_Sendrecv_replace(buffer, 4 + rank, MPI_INT, right, 88, left, 88, comm, &status);
    show("sendrecv_replace_truncated", rc, &status, MPI_INT, buffer, sizeof(buffer));
}

static void probes(void)
{
    int send[16] = {0}, receive[16] = {0};
    MPI_Status status;
    int flag;
    if (rank % 2 == 0) {
        fill_ints(send, 5, rank);
        MPI_Send(send, 5, MPI_INT, partner, 90, comm);
        MPI_Send(send, 6, MPI_INT, partner, 91, comm);
        MPI_Send(send, 7, MPI_INT, partner, 92, comm);
        MPI_Send(send, 8, MPI_INT, partner, 93, comm);
    } else {
        fill(&status, sizeof(status));
        show("probe_any", MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &status), &status, MPI_INT, NULL, 0);
        MPI_Recv(receive, 16, MPI_INT, partner, 90, comm, MPI_STATUS_IGNORE);
        int rc;
        do {
            fill(&status, sizeof(status));
            rc = MPI_Iprobe(partner, 91, comm, &flag, &status);
        } while (rc == MPI_SUCCESS && !flag);
        show("iprobe_found", rc, &status, MPI_INT, NULL, 0);
        note("r%d iprobe_found flag=%d\n", rank, flag);
        MPI_Recv(receive, 16, MPI_INT, partner, 91, comm, MPI_STATUS_IGNORE);

        /* Matched probes. */
        MPI_Message message = MPI_MESSAGE_NULL;
        fill(&status, sizeof(status));
        show("mprobe", MPI_Mprobe(partner, 92, comm, &message, &status), &status, MPI_INT, NULL, 0);
        memset(receive, 0, sizeof(receive));
        fill(&status, sizeof(status));
        show("mrecv", MPI_Mrecv(receive, 16, MPI_INT, &message, &status), &status, MPI_INT, receive,
             sizeof(receive));
        note("r%d mrecv message_null=%d\n", rank, message == MPI_MESSAGE_NULL);
        do {
            fill(&status, sizeof(status));
            rc = MPI_Improbe(MPI_ANY_SOURCE, 93, comm, &flag, &message, &status);
        } while (rc == MPI_SUCCESS && !flag);
        show("improbe_found", rc, &status, MPI_INT, NULL, 0);
        MPI_Request request;
        memset(receive, 0, sizeof(receive));
        MPI_Imrecv(receive, 16, MPI_INT, &message, &request);
        fill(&status, sizeof(status));
        show("imrecv_wait", MPI_Wait(&request, &status), &status, MPI_INT, receive, sizeof(receive));
    }
    /* Nothing to find; MPI_PROC_NULL. */
    fill(&status, sizeof(status));
    flag = -1;
    show("iprobe_nothing", MPI_Iprobe(partner, 99, comm, &flag, &status), &status, MPI_INT, NULL, 0);
    note("r%d iprobe_nothing flag=%d\n", rank, flag);
    MPI_Message message = MPI_MESSAGE_NULL;
    flag = -1;
    fill(&status, sizeof(status));
    show("improbe_nothing", MPI_Improbe(partner, 99, comm, &flag, &message, &status), &status, MPI_INT, NULL,
         0);
    note("r%d improbe_nothing flag=%d message_null=%d\n", rank, flag, message == MPI_MESSAGE_NULL);
    fill(&status, sizeof(status));
    show("probe_proc_null", MPI_Probe(MPI_PROC_NULL, 5, comm, &status), &status, MPI_INT, NULL, 0);
    fill(&status, sizeof(status));
    flag = -1;
    show("iprobe_proc_null", MPI_Iprobe(MPI_PROC_NULL, 5, comm, &flag, &status), &status, MPI_INT, NULL, 0);
    note("r%d iprobe_proc_null flag=%d\n", rank, flag);
    fill(&status, sizeof(status));
    show("mprobe_proc_null", MPI_Mprobe(MPI_PROC_NULL, 5, comm, &message, &status), &status, MPI_INT, NULL,
         0);
    note("r%d mprobe_proc_null message_no_proc=%d\n", rank, message == MPI_MESSAGE_NO_PROC);
    fill(&status, sizeof(status));
    show("mrecv_no_proc", MPI_Mrecv(receive, 16, MPI_INT, &message, &status), &status, MPI_INT, NULL, 0);
    note("r%d mrecv_no_proc message_null=%d\n", rank, message == MPI_MESSAGE_NULL);
}

/* Requests of the Wait/Test tests: two receives from the partner, completed before the call under test
 * (so that what it returns does not depend on timing). */
static void post_pair(MPI_Request requests[2], int receive[2][8], int tag)
{
    memset(receive, 0, 2 * 8 * sizeof(int));
    MPI_Irecv(receive[0], 8, MPI_INT, partner, tag, comm, &requests[0]);
    MPI_Irecv(receive[1], 8, MPI_INT, MPI_ANY_SOURCE, tag + 1, comm, &requests[1]);
    int send[8] = {0};
    fill_ints(send, 5, rank + tag);
    MPI_Send(send, 3, MPI_INT, partner, tag, comm);
    MPI_Send(send, 5, MPI_INT, partner, tag + 1, comm);
    for (int i = 0; i < 2; i++)
        for (int flag = 0; !flag;)
            MPI_Request_get_status(requests[i], &flag, MPI_STATUS_IGNORE);
}

static void wait_test_family(void)
{
    MPI_Request requests[3], null_requests[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status status, statuses[3];
    int receive[2][8] = {{0}}, index = -7, outcount = -7, indices[3], flag = -7;

    /* All null. */
    fill(&status, sizeof(status));
    show("waitany_all_null", MPI_Waitany(3, null_requests, &index, &status), &status, MPI_INT, NULL, 0);
    note("r%d waitany_all_null index=%d\n", rank, index);
    fill(&status, sizeof(status));
    show("waitany_none", MPI_Waitany(0, null_requests, &index, &status), &status, MPI_INT, NULL, 0);
    note("r%d waitany_none index=%d\n", rank, index);
    fill(statuses, sizeof(statuses));
    show("waitsome_all_null", MPI_Waitsome(3, null_requests, &outcount, indices, statuses), NULL, MPI_INT,
         NULL, 0);
    note("r%d waitsome_all_null outcount=%d\n", rank, outcount);
    show("waitall_none", MPI_Waitall(0, null_requests, statuses), NULL, MPI_INT, NULL, 0);
    show("waitall_negative_count", MPI_Waitall(-1, null_requests, statuses), NULL, MPI_INT, NULL, 0);
    fill(statuses, sizeof(statuses));
    show("waitall_all_null", MPI_Waitall(3, null_requests, statuses), NULL, MPI_INT, NULL, 0);
    statuses_line("waitall_all_null", 3, statuses, null_requests);
    fill(&status, sizeof(status));
    show("testany_all_null", MPI_Testany(3, null_requests, &index, &flag, &status), &status, MPI_INT, NULL,
         0);
    note("r%d testany_all_null index=%d flag=%d\n", rank, index, flag);
    fill(statuses, sizeof(statuses));
    show("testsome_all_null", MPI_Testsome(3, null_requests, &outcount, indices, statuses), NULL, MPI_INT,
         NULL, 0);
    note("r%d testsome_all_null outcount=%d\n", rank, outcount);
    fill(statuses, sizeof(statuses));
    show("testall_all_null", MPI_Testall(3, null_requests, &flag, statuses), NULL, MPI_INT, NULL, 0);
    note("r%d testall_all_null flag=%d\n", rank, flag);
    statuses_line("testall_all_null", 3, statuses, null_requests);
    fill(&status, sizeof(status));
    MPI_Request null_request = MPI_REQUEST_NULL;
    show("test_null", MPI_Test(&null_request, &flag, &status), &status, MPI_INT, NULL, 0);
    note("r%d test_null flag=%d\n", rank, flag);

    /* Waitany / Waitsome / Waitall with a null request among completed receives. */
    post_pair(requests, receive, 100);
    requests[2] = requests[1];
    requests[1] = MPI_REQUEST_NULL;
    fill(&status, sizeof(status));
    show("waitany", MPI_Waitany(3, requests, &index, &status), &status, MPI_INT, receive, sizeof(receive));
    note("r%d waitany index=%d requests=%s,%s,%s\n", rank, index, null_or_set(requests[0]),
         null_or_set(requests[1]), null_or_set(requests[2]));
    fill(&status, sizeof(status));
    show("waitany_second", MPI_Waitany(3, requests, &index, &status), &status, MPI_INT, receive,
         sizeof(receive));
    note("r%d waitany_second index=%d\n", rank, index);

    post_pair(requests, receive, 110);
    requests[2] = requests[1];
    requests[1] = MPI_REQUEST_NULL;
    fill(statuses, sizeof(statuses));
    memset(indices, 0x5b, sizeof(indices));
    show("waitsome", MPI_Waitsome(3, requests, &outcount, indices, statuses), NULL, MPI_INT, receive,
         sizeof(receive));
    note("r%d waitsome outcount=%d indices=%d,%d,%d\n", rank, outcount, indices[0], indices[1], indices[2]);
    statuses_line("waitsome", 3, statuses, requests);

    post_pair(requests, receive, 120);
    requests[2] = requests[1];
    requests[1] = MPI_REQUEST_NULL;
    fill(statuses, sizeof(statuses));
    show("waitall", MPI_Waitall(3, requests, statuses), NULL, MPI_INT, receive, sizeof(receive));
    statuses_line("waitall", 3, statuses, requests);

    post_pair(requests, receive, 130);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow" /* gcc 12 takes MPICH's (MPI_Status *)1 for a buffer */
#endif
    show("waitall_ignore", MPI_Waitall(2, requests, MPI_STATUSES_IGNORE), NULL, MPI_INT, receive,
         sizeof(receive));
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    note("r%d waitall_ignore requests=%s,%s\n", rank, null_or_set(requests[0]), null_or_set(requests[1]));

    /* The Test family on completed receives. */
    post_pair(requests, receive, 140);
    fill(&status, sizeof(status));
    show("test", MPI_Test(&requests[0], &flag, &status), &status, MPI_INT, receive, sizeof(receive));
    note("r%d test flag=%d request=%s\n", rank, flag, null_or_set(requests[0]));
    fill(&status, sizeof(status));
    show("testany", MPI_Testany(2, requests, &index, &flag, &status), &status, MPI_INT, receive,
         sizeof(receive));
    note("r%d testany index=%d flag=%d\n", rank, index, flag);

    post_pair(requests, receive, 150);
    fill(statuses, sizeof(statuses));
    memset(indices, 0x5b, sizeof(indices));
    show("testsome", MPI_Testsome(2, requests, &outcount, indices, statuses), NULL, MPI_INT, receive,
         sizeof(receive));
    note("r%d testsome outcount=%d indices=%d,%d\n", rank, outcount, indices[0], indices[1]);
    statuses_line("testsome", 2, statuses, requests);

    post_pair(requests, receive, 160);
    fill(statuses, sizeof(statuses));
    show("testall", MPI_Testall(2, requests, &flag, statuses), NULL, MPI_INT, receive, sizeof(receive));
    note("r%d testall flag=%d\n", rank, flag);
    statuses_line("testall", 2, statuses, requests);

    /* A receive nothing will match: the Test family says not done and writes nothing; then cancelled. */
    MPI_Request pending;
    MPI_Irecv(receive[0], 8, MPI_INT, partner, 199, comm, &pending);
    fill(&status, sizeof(status));
    flag = -7;
    show("test_pending", MPI_Test(&pending, &flag, &status), &status, MPI_INT, NULL, 0);
    note("r%d test_pending flag=%d request=%s\n", rank, flag, null_or_set(pending));
    fill(&status, sizeof(status));
    index = -7;
    flag = -7;
    show("testany_pending", MPI_Testany(1, &pending, &index, &flag, &status), &status, MPI_INT, NULL, 0);
    note("r%d testany_pending index=%d flag=%d\n", rank, index, flag);
    fill(statuses, sizeof(statuses));
    show("testsome_pending", MPI_Testsome(1, &pending, &outcount, indices, statuses), NULL, MPI_INT, NULL, 0);
    note("r%d testsome_pending outcount=%d\n", rank, outcount);
    MPI_Cancel(&pending);
    fill(&status, sizeof(status));
    result("wait_cancelled", MPI_Wait(&pending, &status));
    error_field(&status);
    note(" request=%s\n", null_or_set(pending));
    /* Cancelled inside a Waitall. */
    MPI_Irecv(receive[0], 8, MPI_INT, partner, 198, comm, &requests[0]);
    MPI_Irecv(receive[1], 8, MPI_INT, partner, 197, comm, &requests[1]);
    MPI_Cancel(&requests[0]);
    MPI_Cancel(&requests[1]);
    fill(statuses, sizeof(statuses));
    show("waitall_cancelled", MPI_Waitall(2, requests, statuses), NULL, MPI_INT, NULL, 0);
    for (int i = 0; i < 2; i++) {
        note("r%d waitall_cancelled[%d] request=%s", rank, i, null_or_set(requests[i]));
        error_field(&statuses[i]);
        note("\n");
    }
}

static void persistent(void)
{
    int send[8] = {0}, receive[8] = {0};
    MPI_Request requests[2];
    MPI_Status status, statuses[2];
    int index = -7, flag = -7, outcount = -7, indices[2];
    fill_ints(send, 6, rank);
    MPI_Recv_init(receive, 8, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &requests[0]);
    MPI_Send_init(send, 6, MPI_INT, partner, 170, comm, &requests[1]);
    /* Started, waited for one by one: the handles stay (inactive). The receive buffer is cleared before
     * each start (a message that arrived already is delivered by the start). */
    memset(receive, 0, sizeof(receive));
    MPI_Startall(2, requests);
    fill(&status, sizeof(status));
    show("persistent_wait_recv", MPI_Wait(&requests[0], &status), &status, MPI_INT, receive, sizeof(receive));
    fill(&status, sizeof(status));
    show("persistent_wait_send", MPI_Wait(&requests[1], &status), &status, MPI_INT, NULL, 0);
    note("r%d persistent_wait requests=%s,%s\n", rank, null_or_set(requests[0]), null_or_set(requests[1]));
    /* Inactive: Wait returns an empty status at once, Waitany MPI_UNDEFINED, Test flag 1. */
    fill(&status, sizeof(status));
    show("persistent_wait_inactive", MPI_Wait(&requests[0], &status), &status, MPI_INT, NULL, 0);
    fill(&status, sizeof(status));
    show("persistent_waitany_inactive", MPI_Waitany(2, requests, &index, &status), &status, MPI_INT, NULL, 0);
    note("r%d persistent_waitany_inactive index=%d\n", rank, index);
    fill(statuses, sizeof(statuses));
    show("persistent_waitsome_inactive", MPI_Waitsome(2, requests, &outcount, indices, statuses), NULL,
         MPI_INT, NULL, 0);
    note("r%d persistent_waitsome_inactive outcount=%d\n", rank, outcount);
    fill(statuses, sizeof(statuses));
    show("persistent_waitall_inactive", MPI_Waitall(2, requests, statuses), NULL, MPI_INT, NULL, 0);
    statuses_line("persistent_waitall_inactive", 2, statuses, requests);
    fill(&status, sizeof(status));
    show("persistent_test_inactive", MPI_Test(&requests[0], &flag, &status), &status, MPI_INT, NULL, 0);
    note("r%d persistent_test_inactive flag=%d\n", rank, flag);
    /* Started again, completed together. */
    memset(receive, 0, sizeof(receive));
    MPI_Start(&requests[0]);
    MPI_Start(&requests[1]);
    fill(statuses, sizeof(statuses));
    show("persistent_waitall", MPI_Waitall(2, requests, statuses), NULL, MPI_INT, receive, sizeof(receive));
    statuses_line("persistent_waitall", 2, statuses, requests);
    /* One started, one inactive: Waitany completes the started one. */
    MPI_Start(&requests[0]);
    MPI_Send(send, 2, MPI_INT, partner, 171, comm);
    fill(&status, sizeof(status));
    show("persistent_waitany", MPI_Waitany(2, requests, &index, &status), &status, MPI_INT, receive,
         sizeof(receive));
    note("r%d persistent_waitany index=%d\n", rank, index);
    MPI_Request_free(&requests[0]);
    MPI_Request_free(&requests[1]);
    note("r%d persistent_freed requests=%s,%s\n", rank, null_or_set(requests[0]), null_or_set(requests[1]));

    /* Persistent collectives. */
    MPI_Request collective;
    double values[4] = {rank + 0.1, rank * 3.3, 1e-3 / (rank + 1), -rank * 7.7}, sums[4] = {0};
    MPI_Allreduce_init(values, sums, 4, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &collective);
    for (int round = 0; round < 2; round++) {
        MPI_Start(&collective);
        fill(&status, sizeof(status));
        result("persistent_allreduce", MPI_Wait(&collective, &status));
        error_field(&status);
        note(" buf=%016llx request=%s\n", (unsigned long long)hash_bytes(sums, sizeof(sums)),
             null_or_set(collective));
    }
    MPI_Start(&collective);
    fill(statuses, sizeof(statuses));
    MPI_Request pair[2] = {collective, MPI_REQUEST_NULL};
    show("persistent_allreduce_waitall", MPI_Waitall(2, pair, statuses), NULL, MPI_INT, sums, sizeof(sums));
    note("r%d persistent_allreduce_waitall[0] request=%s", rank, null_or_set(pair[0]));
    error_field(&statuses[0]);
    note("\n");
    statuses_line("persistent_allreduce_waitall_null", 1, &statuses[1], &pair[1]);
    MPI_Request_free(&collective);
    int token = rank == 1 ? 42 : 0;
    MPI_Bcast_init(&token, 1, MPI_INT, 1, comm, MPI_INFO_NULL, &collective);
    MPI_Start(&collective);
    fill(&status, sizeof(status));
    result("persistent_bcast", MPI_Wait(&collective, &status));
    error_field(&status);
    note(" token=%d\n", token);
    MPI_Request_free(&collective);
}

/* Generalized requests: the query function fills the status; count how often MPI calls it. */
static int query_calls, free_calls;

static int query(void *extra_state, MPI_Status *status)
{
    (void)extra_state;
    query_calls++;
    MPI_Status_set_elements(status, MPI_INT, 3);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = 3;
    status->MPI_TAG = 77;
    return MPI_SUCCESS;
}

static int free_request(void *extra_state)
{
    (void)extra_state;
    free_calls++;
    return MPI_SUCCESS;
}

static int cancel_request(void *extra_state, int complete)
{
    (void)extra_state;
    (void)complete;
    return MPI_SUCCESS;
}

static void generalized(void)
{
    MPI_Request request, requests[2];
    MPI_Status status, statuses[2];
    int flag = -7, index = -7;
    MPI_Grequest_start(query, free_request, cancel_request, NULL, &request);
    MPI_Grequest_complete(request);
    fill(&status, sizeof(status));
    show("grequest_wait", MPI_Wait(&request, &status), &status, MPI_INT, NULL, 0);
    note("r%d grequest_wait request=%s queries=%d frees=%d\n", rank, null_or_set(request), query_calls,
         free_calls);
    MPI_Grequest_start(query, free_request, cancel_request, NULL, &request);
    MPI_Grequest_complete(request);
    fill(&status, sizeof(status));
    show("grequest_test", MPI_Test(&request, &flag, &status), &status, MPI_INT, NULL, 0);
    note("r%d grequest_test flag=%d queries=%d frees=%d\n", rank, flag, query_calls, free_calls);
    int receive[8] = {0}, send[8] = {0};
    fill_ints(send, 2, rank);
    MPI_Grequest_start(query, free_request, cancel_request, NULL, &requests[0]);
    MPI_Irecv(receive, 8, MPI_INT, partner, 180, comm, &requests[1]);
    MPI_Send(send, 2, MPI_INT, partner, 180, comm);
    MPI_Grequest_complete(requests[0]);
    fill(statuses, sizeof(statuses));
    show("grequest_waitall", MPI_Waitall(2, requests, statuses), NULL, MPI_INT, receive, sizeof(receive));
    statuses_line("grequest_waitall", 2, statuses, requests);
    note("r%d grequest_waitall queries=%d frees=%d\n", rank, query_calls, free_calls);
    MPI_Grequest_start(query, free_request, cancel_request, NULL, &requests[0]);
    requests[1] = MPI_REQUEST_NULL;
    MPI_Grequest_complete(requests[0]);
    fill(&status, sizeof(status));
    show("grequest_waitany", MPI_Waitany(2, requests, &index, &status), &status, MPI_INT, NULL, 0);
    note("r%d grequest_waitany index=%d queries=%d frees=%d\n", rank, index, query_calls, free_calls);
}

/* ---- collectives ---------------------------------------------------------------------------------- */

static uint64_t random_state;

/* Doubles over many magnitudes and both signs: their sums depend on the order of the additions. */
static double random_double(void)
{
    random_state = random_state * 6364136223846793005ull + 1442695040888963407ull;
    const double unit = (double)(random_state >> 11) / 9007199254740992.0 - 0.5;
    static const double scales[] = {1e-8, 1e-3, 1.0, 1e3, 1e8, 1e15};
    return unit * scales[(random_state >> 3) % 6];
}

static void random_doubles(double *values, int count, int seed)
{
    random_state = 0x9e3779b97f4a7c15ull * (uint64_t)(seed + 1);
    for (int i = 0; i < count; i++)
        values[i] = random_double();
}

static void show_doubles(const char *what, int rc, const double *values, int count)
{
    result(what, rc);
    uint64_t first;
    memcpy(&first, values, sizeof(first));
    note(" first=%016llx bits=%016llx\n", (unsigned long long)first,
         (unsigned long long)hash_bytes(values, (size_t)count * sizeof(double)));
}

static long user_op_calls;

static void user_sum(void *in, void *inout, int *length, MPI_Datatype *type)
{
    (void)type;
    user_op_calls++;
    for (int i = 0; i < *length; i++)
        ((double *)inout)[i] += ((double *)in)[i];
}

static void user_ordered(void *in, void *inout, int *length, MPI_Datatype *type)
{
    (void)type;
    user_op_calls++;
    for (int i = 0; i < *length; i++)
        ((double *)inout)[i] = ((double *)in)[i] * 0.5 + ((double *)inout)[i] * 0.25;
}

static void reductions(void)
{
    enum { LARGE = 20000 };
    /* Reduce_scatter reads n + r values for rank r: a few more than n per rank. */
    const size_t most = (size_t)(LARGE + RANKS) * RANKS;
    double *values = malloc(most * sizeof(double)), *results = malloc(most * sizeof(double));
    if (!values || !results)
        abort();
    char what[64];
    static const int counts[] = {1, 7, 100, 3000, LARGE};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        const int n = counts[c];
        random_doubles(values, (n + RANKS) * RANKS, rank * 100 + (int)c);
        memset(results, 0, (size_t)n * sizeof(double));
        snprintf(what, sizeof(what), "reduce_scatter_block_%d", n);
        show_doubles(what, MPI_Reduce_scatter_block(values, results, n, MPI_DOUBLE, MPI_SUM, comm), results,
                     n);
        snprintf(what, sizeof(what), "allreduce_%d", n);
        show_doubles(what, MPI_Allreduce(values, results, n, MPI_DOUBLE, MPI_SUM, comm), results, n);
        for (int root = 0; root < RANKS; root += 3) {
            memset(results, 0x5b, (size_t)n * sizeof(double));
            snprintf(what, sizeof(what), "reduce_%d_root%d", n, root);
            show_doubles(what, MPI_Reduce(values, results, n, MPI_DOUBLE, MPI_SUM, root, comm), results, n);
        }
        snprintf(what, sizeof(what), "scan_%d", n);
        show_doubles(what, MPI_Scan(values, results, n, MPI_DOUBLE, MPI_SUM, comm), results, n);
        memset(results, 0x5b, (size_t)n * sizeof(double));
        snprintf(what, sizeof(what), "exscan_%d", n);
        show_doubles(what, MPI_Exscan(values, results, n, MPI_DOUBLE, MPI_PROD, comm), results, n);
        int recvcounts[RANKS];
        for (int r = 0; r < RANKS; r++)
            recvcounts[r] = n + r;
        snprintf(what, sizeof(what), "reduce_scatter_%d", n);
        show_doubles(what, MPI_Reduce_scatter(values, results, recvcounts, MPI_DOUBLE, MPI_SUM, comm),
                     results, n + rank);
        snprintf(what, sizeof(what), "allreduce_c_%d", n);
        show_doubles(what, MPI_Allreduce_c(values, results, n, MPI_DOUBLE, MPI_SUM, comm), results, n);
        /* In place. */
        memcpy(results, values, (size_t)n * sizeof(double));
        snprintf(what, sizeof(what), "allreduce_in_place_%d", n);
        show_doubles(what, MPI_Allreduce(MPI_IN_PLACE, results, n, MPI_DOUBLE, MPI_SUM, comm), results, n);
    }
    /* MAX/MIN on doubles with signed zeros: which zero wins depends on the order. */
    double zeros[4] = {rank % 2 ? 0.0 : -0.0, rank % 2 ? -0.0 : 0.0, -0.0, 0.0}, zero_results[4];
    show_doubles("allreduce_max_zeros", MPI_Allreduce(zeros, zero_results, 4, MPI_DOUBLE, MPI_MAX, comm),
                 zero_results, 4);
    show_doubles("allreduce_min_zeros", MPI_Allreduce(zeros, zero_results, 4, MPI_DOUBLE, MPI_MIN, comm),
                 zero_results, 4);
    struct {
        double value;
        int index;
    } located[2], located_results[2];
    memset(located, 0, sizeof(located)); /* the padding too: MPI may copy it */
    memset(located_results, 0, sizeof(located_results));
    located[0].value = rank % 2 ? 0.0 : -0.0;
    located[0].index = rank;
    located[1].value = 1.5;
    located[1].index = rank;
    result("allreduce_minloc_double",
           MPI_Allreduce(located, located_results, 2, MPI_DOUBLE_INT, MPI_MINLOC, comm));
    uint64_t located_bits[2];
    memcpy(&located_bits[0], &located_results[0].value, sizeof(double));
    memcpy(&located_bits[1], &located_results[1].value, sizeof(double));
    note(" values=%016llx,%d,%016llx,%d\n", (unsigned long long)located_bits[0], located_results[0].index,
         (unsigned long long)located_bits[1], located_results[1].index);
    /* Integer and logical reductions (exact whatever the order). */
    long long integers[5] = {rank * 1000003LL, -rank, 1LL << (10 * rank), rank + 7, 3}, integer_results[5];
    result("allreduce_sum_ll", MPI_Allreduce(integers, integer_results, 5, MPI_LONG_LONG, MPI_SUM, comm));
    note(" values=%lld,%lld,%lld,%lld,%lld\n", integer_results[0], integer_results[1], integer_results[2],
         integer_results[3], integer_results[4]);
    result("allreduce_prod_ll", MPI_Allreduce(integers, integer_results, 5, MPI_LONG_LONG, MPI_PROD, comm));
    note(" values=%lld,%lld,%lld,%lld,%lld\n", integer_results[0], integer_results[1], integer_results[2],
         integer_results[3], integer_results[4]);
    int bits[2] = {1 << rank, ~(1 << rank)}, bit_results[2];
    result("allreduce_bor", MPI_Allreduce(bits, bit_results, 2, MPI_INT, MPI_BOR, comm));
    note(" values=%d,%d\n", bit_results[0], bit_results[1]);
    result("allreduce_lxor", MPI_Allreduce(bits, bit_results, 2, MPI_INT, MPI_LXOR, comm));
    note(" values=%d,%d\n", bit_results[0], bit_results[1]);
    int pairs[4] = {rank % 3, rank, 5 - rank, rank}, pair_results[4];
    result("allreduce_maxloc_2int", MPI_Allreduce(pairs, pair_results, 2, MPI_2INT, MPI_MAXLOC, comm));
    note(" values=%d,%d,%d,%d\n", pair_results[0], pair_results[1], pair_results[2], pair_results[3]);
    int reduced = -1;
    result("reduce_max_int", MPI_Reduce(&rank, &reduced, 1, MPI_INT, MPI_MAX, 2, comm));
    note(" value=%d\n", reduced);
    result("scan_sum_int", MPI_Scan(&rank, &reduced, 1, MPI_INT, MPI_SUM, comm));
    note(" value=%d\n", reduced);
    reduced = -1;
    result("exscan_sum_int", MPI_Exscan(&rank, &reduced, 1, MPI_INT, MPI_SUM, comm));
    note(" value=%d\n", reduced);
    int scattered[RANKS * 2], scattered_result[2] = {-1, -1}, scattered_counts[RANKS] = {2, 1, 2, 1};
    for (int i = 0; i < RANKS * 2; i++)
        scattered[i] = rank * 100 + i;
    result("reduce_scatter_int",
           MPI_Reduce_scatter(scattered, scattered_result, scattered_counts, MPI_INT, MPI_BXOR, comm));
    note(" values=%d,%d\n", scattered_result[0], scattered_result[1]);
    int block[RANKS], block_result = -1;
    for (int r = 0; r < RANKS; r++)
        block[r] = rank * 10 + r;
    result("reduce_scatter_block_int",
           MPI_Reduce_scatter_block(block, &block_result, 1, MPI_INT, MPI_SUM, comm));
    note(" value=%d\n", block_result);

    /* User-defined operations: the result and how often MPI called them. */
    MPI_Op sum, ordered;
    MPI_Op_create(user_sum, 1, &sum);
    MPI_Op_create(user_ordered, 0, &ordered);
    random_doubles(values, 1000 * RANKS, rank + 7);
    user_op_calls = 0;
    show_doubles("allreduce_user_sum", MPI_Allreduce(values, results, 1000, MPI_DOUBLE, sum, comm), results,
                 1000);
    show_doubles("reduce_user_ordered", MPI_Reduce(values, results, 1000, MPI_DOUBLE, ordered, 1, comm),
                 results, 1000);
    show_doubles("reduce_scatter_block_user_sum",
                 MPI_Reduce_scatter_block(values, results, 1000, MPI_DOUBLE, sum, comm), results, 1000);
    show_doubles("scan_user_ordered", MPI_Scan(values, results, 1000, MPI_DOUBLE, ordered, comm), results,
                 1000);
    note("r%d user_op_calls=%ld\n", rank, user_op_calls);
    MPI_Op_free(&sum);
    MPI_Op_free(&ordered);
    free(values);
    free(results);
}

static void data_movement(void)
{
    enum { N = 64 };
    int send[N * RANKS], receive[N * RANKS], counts[RANKS], own_counts[RANKS], displacements[RANKS];
    fill_ints(send, N * RANKS, rank + 1);
    for (int r = 0; r < RANKS; r++) {
        counts[r] = r + 1;        /* what rank r contributes */
        own_counts[r] = rank + 1; /* what this rank gets from each in alltoallv */
        displacements[r] = r * N;
    }
#define MOVED(what, call)                                                                                    \
    do {                                                                                                     \
        memset(receive, 0x5b, sizeof(receive));                                                              \
        show(what, call, NULL, MPI_INT, receive, sizeof(receive));                                           \
    } while (0)
    MOVED("bcast", (memcpy(receive, send, sizeof(send)), MPI_Bcast(receive, N, MPI_INT, 2, comm)));
    MOVED("gather", MPI_Gather(send, N, MPI_INT, receive, N, MPI_INT, 1, comm));
    MOVED("gatherv", MPI_Gatherv(send, rank + 1, MPI_INT, receive, counts, displacements, MPI_INT, 0, comm));
    MOVED("scatter", MPI_Scatter(send, N, MPI_INT, receive, N, MPI_INT, 3, comm));
    MOVED("scatterv", MPI_Scatterv(send, counts, displacements, MPI_INT, receive, N, MPI_INT, 0, comm));
    MOVED("allgather", MPI_Allgather(send, N, MPI_INT, receive, N, MPI_INT, comm));
    MOVED("allgatherv",
          MPI_Allgatherv(send, rank + 1, MPI_INT, receive, counts, displacements, MPI_INT, comm));
    MOVED("alltoall", MPI_Alltoall(send, N, MPI_INT, receive, N, MPI_INT, comm));
    MOVED("alltoallv", MPI_Alltoallv(send, counts, displacements, MPI_INT, receive, own_counts, displacements,
                                     MPI_INT, comm));
    MPI_Datatype types[RANKS];
    int byte_displacements[RANKS];
    for (int r = 0; r < RANKS; r++) {
        types[r] = MPI_INT;
        byte_displacements[r] = r * N * (int)sizeof(int);
    }
    int same_counts[RANKS] = {N, N, N, N};
    MOVED("alltoallw", MPI_Alltoallw(send, same_counts, byte_displacements, types, receive, same_counts,
                                     byte_displacements, types, comm));
    show("barrier", MPI_Barrier(comm), NULL, MPI_INT, NULL, 0);
    MPI_Comm ring;
    const int dims[1] = {RANKS}, periods[1] = {1};
    MPI_Cart_create(comm, 1, dims, periods, 0, &ring);
    MOVED("neighbor_allgather", MPI_Neighbor_allgather(send, N, MPI_INT, receive, N, MPI_INT, ring));
    MOVED("neighbor_alltoall", MPI_Neighbor_alltoall(send, N, MPI_INT, receive, N, MPI_INT, ring));
    MPI_Comm_free(&ring);
#undef MOVED
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != RANKS) {
        if (rank == 0)
            fprintf(stderr, "status_fidelity: needs exactly %d ranks, not %d\n", RANKS, size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Errors come back as codes (the truncation tests), on the world and the duplicate alike. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    left = (rank + RANKS - 1) % RANKS;
    right = (rank + 1) % RANKS;
    partner = rank ^ 1;

    blocking_receives();
    nonblocking_receives();
    sendrecv();
    derived_types();
    truncation();
    probes();
    wait_test_family();
    persistent();
    generalized();
    reductions();
    data_movement();

    /* Rank 0 prints every rank's lines in rank order. */
    int length = (int)text_used, lengths[RANKS], offsets[RANKS], total = 0;
    MPI_Gather(&length, 1, MPI_INT, lengths, 1, MPI_INT, 0, comm);
    if (rank == 0)
        for (int r = 0; r < RANKS; r++) {
            offsets[r] = total;
            total += lengths[r];
        }
    char *all = rank == 0 ? malloc((size_t)total + 1) : NULL;
    MPI_Gatherv(text, length, MPI_CHAR, all, lengths, offsets, MPI_CHAR, 0, comm);
    if (rank == 0) {
        fwrite(all, 1, (size_t)total, stdout);
        printf("status_fidelity: done\n");
        fflush(stdout);
    }
    free(all);
    free(text);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
