/*
 * place_batches.c — the whole event place (otfx_event_place_run) on one process: batches are sent to
 * itself on a duplicate of MPI_COMM_SELF, then the place runs until the goodbye batch. Covers the
 * batch header checks of event_place.c (too short, wrong magic, other version, record bytes that do
 * not match the message) next to the decoder's: every malformed batch is reported, counted and
 * dropped, and the good batches around them are stored whole (the test's expected output says so).
 */
#include "batch_fixture.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define MAX_BATCHES 8

struct outbox {
    struct batch_builder batches[MAX_BATCHES];
    size_t sizes[MAX_BATCHES];
    MPI_Request requests[MAX_BATCHES];
    int count;
};

static void send_batch(struct outbox *outbox, MPI_Comm comm, struct batch_builder *batch, size_t size)
{
    outbox->batches[outbox->count] = *batch;
    outbox->sizes[outbox->count] = size;
    MPI_Isend(batch->bytes, (int)size, MPI_BYTE, 0, CAPTURE_BATCH_TAG, comm,
              &outbox->requests[outbox->count]);
    outbox->count++;
}

/* A header-only change to a finished batch. */
static void set_header(struct batch_builder *batch, uint32_t magic, uint16_t version, uint16_t flags)
{
    struct capture_batch_header header;
    memcpy(&header, batch->bytes, sizeof(header));
    header.magic = magic;
    header.version = version;
    header.flags = flags;
    memcpy(batch->bytes, &header, sizeof(header));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm tool_comm;
    MPI_Comm_dup(MPI_COMM_SELF, &tool_comm);
    struct outbox outbox = {.count = 0};
    const int32_t world[] = {0};
    struct batch_builder batch;

    /* 1. good: the world, one MPI_Send call (2 events). */
    batch_begin(&batch, 0);
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 1, 0, world, 1);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 10);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 11);
    send_batch(&outbox, tool_comm, &batch, batch_finish(&batch));

    /* 2. shorter than a batch header. */
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 20);
    batch_finish(&batch);
    send_batch(&outbox, tool_comm, &batch, 20);

    /* 3. wrong magic, 4. other version: otherwise good batches. */
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 20);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 21);
    size_t size = batch_finish(&batch);
    set_header(&batch, 0x12345678u, CAPTURE_BATCH_VERSION, 0);
    send_batch(&outbox, tool_comm, &batch, size);
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 20);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 21);
    size = batch_finish(&batch);
    set_header(&batch, CAPTURE_BATCH_MAGIC, CAPTURE_BATCH_VERSION + 1, 0);
    send_batch(&outbox, tool_comm, &batch, size);

    /* 5. the message ends before the records the header announces. */
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 20);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 21);
    size = batch_finish(&batch);
    send_batch(&outbox, tool_comm, &batch, size - 16);

    /* 6. a good header, records the decoder refuses (a leave without an enter). */
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 20);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 21);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 22);
    send_batch(&outbox, tool_comm, &batch, batch_finish(&batch));

    /* 7. good, the goodbye: one MPI_Recv call (2 events). */
    batch_begin(&batch, 2);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 30);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 31);
    size = batch_finish(&batch);
    set_header(&batch, CAPTURE_BATCH_MAGIC, CAPTURE_BATCH_VERSION, CAPTURE_BATCH_GOODBYE);
    send_batch(&outbox, tool_comm, &batch, size);

    const otfx_event_place_setup setup = {.tool_comm = tool_comm,
                                          .place_rank = 0,
                                          .first_served = 0,
                                          .served_count = 1,
                                          .functions = fixture_functions()};
    const int result = otfx_event_place_run(&setup);
    MPI_Status statuses[MAX_BATCHES]; /* not MPI_STATUSES_IGNORE: gcc 12 takes it for a 0-byte array */
    MPI_Waitall(outbox.count, outbox.requests, statuses);
    for (int i = 0; i < outbox.count; i++)
        batch_free(&outbox.batches[i]);
    MPI_Comm_free(&tool_comm);
    MPI_Finalize();
    printf("place-batches: place returned %d\n", result);
    return result;
}
