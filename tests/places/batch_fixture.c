/*
 * batch_fixture.c — see batch_fixture.h.
 */
#include "batch_fixture.h"
#include "place_triggers.h"

#include <stdlib.h>
#include <string.h>

static const char *const fixture_names[FIXTURE_FUNCTION_COUNT] = {
    "MPI_Send",       "MPI_Recv",     "MPI_Isend",  "MPI_Wait",       "MPI_Barrier", "MPI_Allreduce",
    "MPI_Comm_split", "MPI_Pcontrol", "MPI_Ibcast", "MPI_Bcast_init", "MPI_Start"};
static const char *const fixture_classes[FIXTURE_FUNCTION_COUNT] = {
    "p2p-send",    "p2p-recv", "p2p-isend",   "completion",      "collective", "collective",
    "comm-create", "other",    "icollective", "collective-init", "start"};

otfx_place_functions fixture_functions(void)
{
    return (otfx_place_functions){
        .names = fixture_names, .classes = fixture_classes, .count = FIXTURE_FUNCTION_COUNT};
}

/* Most events one batch can produce, as the place sizes its scratch (event_place.c). */
#define FIXTURE_EVENT_CAPACITY (2 * (CAPTURE_BATCH_BYTES / sizeof(struct capture_record_header)) + 2)

bool place_fixture_create(struct place_fixture *fixture, size_t budget_bytes, bool announce_world)
{
    memset(fixture, 0, sizeof(*fixture));
    struct event_place *place = &fixture->place;
    place->setup.place_rank = FIXTURE_WORLD_SIZE;
    place->setup.first_served = 0;
    place->setup.served_count = 1;
    place->setup.functions = fixture_functions();
    place->defs = otfx_defs_create();
    place->event_capacity = FIXTURE_EVENT_CAPACITY;
    place->events = malloc(place->event_capacity * sizeof(otfx_event));
    place->ranks = &fixture->rank;
    if (!place->defs || !place->events || !place_describe_functions(place) ||
        otfx_defs_region(place->defs, "MPI_Pcontrol level", OTFX_ROLE_PHASE, &place->phase_region) != OTFX_OK)
        return false;
    place->trace_config = otfx_trace_config_default(budget_bytes);
    if (budget_bytes < 4 * (size_t)place->trace_config.chunk_bytes)
        place->trace_config.chunk_bytes = (uint32_t)(budget_bytes / 4 / 1024 * 1024);
    otfx_ref location;
    if (otfx_defs_location(place->defs, 0, 0, &location) != OTFX_OK ||
        otfx_trace_create(&place->trace_config, place->defs, location, &fixture->stream.trace) != OTFX_OK)
        return false;
    fixture->rank.rank = 0;
    fixture->stream_slot = &fixture->stream;
    fixture->rank.streams = &fixture->stream_slot;
    fixture->rank.stream_capacity = 1;
    if (!announce_world)
        return true;
    struct batch_builder batch;
    batch_begin(&batch, 0);
    int32_t world[FIXTURE_WORLD_SIZE];
    for (int32_t r = 0; r < FIXTURE_WORLD_SIZE; r++)
        world[r] = r;
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 1, 0, world, FIXTURE_WORLD_SIZE);
    batch_finish(&batch);
    uint64_t records = 0;
    bool announced =
        place_fixture_ingest(fixture, batch_records(&batch), batch_record_bytes(&batch), &records);
    batch_free(&batch);
    return announced;
}

void place_fixture_destroy(struct place_fixture *fixture)
{
    struct event_place *place = &fixture->place;
    /* What event_place.c's destroy_place frees for a rank and its stream. */
    if (fixture->stream.trace)
        otfx_trace_destroy(fixture->stream.trace);
    for (uint32_t n = 0; n < fixture->stream.name_capacity; n++)
        free(fixture->stream.names[n]);
    free(fixture->stream.names);
    place_triggers_free_stream(&fixture->stream);
    place_triggers_free(place);
    free(fixture->rank.comms);
    place_symbols_destroy(fixture->rank.symbols);
    free(fixture->rank.throttled);
    free(fixture->rank.clock_segments);
    free(place->functions);
    free(place->events);
    free(place->new_comm_ids);
    if (place->defs)
        otfx_defs_destroy(place->defs);
    memset(fixture, 0, sizeof(*fixture));
}

bool place_fixture_ingest(struct place_fixture *fixture, const unsigned char *records, size_t bytes,
                          uint64_t *record_count)
{
    return place_ingest_records(&fixture->place, &fixture->rank, &fixture->stream, records, bytes,
                                record_count);
}

static void *batch_grow(struct batch_builder *batch, size_t size)
{
    if (batch->size + size > batch->capacity) {
        size_t capacity = batch->capacity ? batch->capacity : 256;
        while (capacity < batch->size + size)
            capacity *= 2;
        unsigned char *bigger = realloc(batch->bytes, capacity);
        if (!bigger)
            abort(); /* a test fixture: nothing sensible to continue with */
        batch->bytes = bigger;
        batch->capacity = capacity;
    }
    void *place = batch->bytes + batch->size;
    memset(place, 0, size);
    batch->size += size;
    return place;
}

void batch_begin(struct batch_builder *batch, uint64_t sequence)
{
    memset(batch, 0, sizeof(*batch));
    struct capture_batch_header header = {.magic = CAPTURE_BATCH_MAGIC,
                                          .version = CAPTURE_BATCH_VERSION,
                                          .app_rank = 0,
                                          .thread = 0,
                                          .sequence = sequence};
    memcpy(batch_grow(batch, sizeof(header)), &header, sizeof(header));
}

void batch_free(struct batch_builder *batch)
{
    free(batch->bytes);
    memset(batch, 0, sizeof(*batch));
}

size_t batch_finish(struct batch_builder *batch)
{
    struct capture_batch_header header;
    memcpy(&header, batch->bytes, sizeof(header));
    header.record_bytes = batch_record_bytes(batch);
    memcpy(batch->bytes, &header, sizeof(header));
    return batch->size;
}

const unsigned char *batch_records(const struct batch_builder *batch)
{
    return batch->bytes + sizeof(struct capture_batch_header);
}

size_t batch_record_bytes(const struct batch_builder *batch)
{
    return batch->size - sizeof(struct capture_batch_header);
}

static struct capture_record_header record_header(uint16_t kind, uint16_t function_id, size_t size,
                                                  uint64_t time)
{
    return (struct capture_record_header){
        .kind = kind, .function_id = function_id, .size = (uint32_t)size, .timestamp = time};
}

void batch_add_enter(struct batch_builder *batch, uint16_t function_id, uint64_t time)
{
    struct capture_record_header header =
        record_header(CAPTURE_RECORD_ENTER, function_id, sizeof(header), time);
    batch_add_raw(batch, &header, sizeof(header));
}

void batch_add_leave(struct batch_builder *batch, uint16_t function_id, uint64_t time)
{
    struct capture_record_header header =
        record_header(CAPTURE_RECORD_LEAVE, function_id, sizeof(header), time);
    batch_add_raw(batch, &header, sizeof(header));
}

void batch_add_message(struct batch_builder *batch, uint16_t kind, uint16_t function_id, uint64_t time,
                       uint32_t comm_id, int32_t peer, int32_t tag, uint64_t bytes, uint16_t request_kind,
                       uint64_t request, uint64_t sequence)
{
    struct capture_p2p_record record = {.header = record_header(kind, function_id, sizeof(record), time),
                                        .comm_id = comm_id,
                                        .peer = peer,
                                        .tag = tag,
                                        .request_kind = request_kind,
                                        .bytes = bytes,
                                        .request = request,
                                        .sequence = sequence};
    batch_add_raw(batch, &record, sizeof(record));
}

void batch_add_p2p(struct batch_builder *batch, uint16_t kind, uint16_t function_id, uint64_t time,
                   uint32_t comm_id, int32_t peer, int32_t tag, uint64_t bytes, uint16_t request_kind,
                   uint64_t request)
{
    batch_add_message(batch, kind, function_id, time, comm_id, peer, tag, bytes, request_kind, request, 0);
}

void batch_add_collective(struct batch_builder *batch, uint16_t function_id, uint64_t time, uint32_t comm_id,
                          int32_t root, uint64_t bytes_sent, uint64_t bytes_received)
{
    batch_add_numbered_collective(batch, function_id, time, comm_id, root, bytes_sent, bytes_received, 0);
}

void batch_add_numbered_collective(struct batch_builder *batch, uint16_t function_id, uint64_t time,
                                   uint32_t comm_id, int32_t root, uint64_t bytes_sent,
                                   uint64_t bytes_received, uint64_t sequence)
{
    struct capture_collective_record record = {
        .header = record_header(CAPTURE_RECORD_COLLECTIVE, function_id, sizeof(record), time),
        .comm_id = comm_id,
        .root = root,
        .bytes_sent = bytes_sent,
        .bytes_received = bytes_received,
        .sequence = sequence};
    batch_add_raw(batch, &record, sizeof(record));
}

void batch_add_comm(struct batch_builder *batch, uint16_t function_id, uint64_t time, uint32_t comm_id,
                    const int32_t *members, uint32_t member_count)
{
    size_t member_bytes = ((member_count * sizeof(int32_t)) + 7) / 8 * 8;
    size_t size = sizeof(struct capture_comm_record) + member_bytes;
    struct capture_comm_record record = {
        .header = record_header(CAPTURE_RECORD_COMM_CREATED, function_id, size, time),
        .comm_id = comm_id,
        .local_size = member_count};
    unsigned char *bytes = batch_grow(batch, size);
    memcpy(bytes, &record, sizeof(record));
    memcpy(bytes + sizeof(record), members, member_count * sizeof(int32_t));
}

void batch_add_phase(struct batch_builder *batch, uint64_t time, int32_t level)
{
    struct capture_phase_record record = {
        .header = record_header(CAPTURE_RECORD_PHASE, FIXTURE_MPI_PCONTROL, sizeof(record), time),
        .level = level};
    batch_add_raw(batch, &record, sizeof(record));
}

void batch_add_raw(struct batch_builder *batch, const void *record, size_t size)
{
    memcpy(batch_grow(batch, size), record, size);
}
