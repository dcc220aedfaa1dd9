/* otf2_export_records.c — the OTF2 records of one otfx event (part of the OTF2 export).
 *
 * Peers and roots become communicator ranks, regions and metrics are checked against the definitions
 * the store has (it may grow while the export runs), otfx's own fields go into attributes. */
#define _POSIX_C_SOURCE 200809L
#include "otf2_export_internal.h"
#include <otfx/support/growth.h>

#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Definitions used by events
 * -------------------------------------------------------------------------------------------- */

static otfx_status check_region(exporter *x, otfx_ref region)
{
    if (region >= x->known_regions)
        x->known_regions = otfx_defs_count_regions(x->defs);
    if (region >= x->known_regions || region > UINT32_MAX - 1 - REGION_REF_OFFSET)
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: event refers to undefined region %u", region);
    return OTFX_OK;
}

static int compare_rank_pairs(const void *a, const void *b)
{
    const rank_pair *left = a, *right = b;
    return (left->world > right->world) - (left->world < right->world);
}

static otfx_status comm_ranks_get(exporter *x, otfx_ref comm, const comm_ranks **out)
{
    if (comm >= x->known_comms)
        x->known_comms = otfx_defs_count_comms(x->defs);
    if (comm >= x->known_comms)
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: event refers to undefined communicator %u", comm);
    if (comm >= x->comm_capacity) {
        size_t old = x->comm_capacity;
        if (!otfx_reserve((void **)&x->comms, &x->comm_capacity, (size_t)comm + 1, sizeof *x->comms, 16))
            return out_of_memory();
        memset(x->comms + old, 0, (x->comm_capacity - old) * sizeof *x->comms);
    }
    comm_ranks *ranks = &x->comms[comm];
    if (!ranks->built) {
        otfx_comm_def def = {0};
        OTFX_TRY(otfx_defs_get_comm(x->defs, comm, &def));
        ranks->size = def.size;
        ranks->identity = true;
        for (uint32_t i = 0; i < def.size; i++)
            ranks->identity = ranks->identity && def.world_ranks[i] == i;
        if (!ranks->identity) {
            ranks->by_world = malloc((def.size ? def.size : 1) * sizeof *ranks->by_world);
            if (!ranks->by_world)
                return out_of_memory();
            for (uint32_t i = 0; i < def.size; i++)
                ranks->by_world[i] = (rank_pair){def.world_ranks[i], i};
            otfx_otf2_sort(ranks->by_world, def.size, sizeof *ranks->by_world, compare_rank_pairs);
        }
        ranks->built = true;
    }
    *out = ranks;
    return OTFX_OK;
}

/* The rank of world rank `world` in communicator `comm`. */
static otfx_status comm_rank_of(exporter *x, otfx_ref comm, uint32_t world, uint32_t *local)
{
    const comm_ranks *ranks = NULL;
    OTFX_TRY(comm_ranks_get(x, comm, &ranks));
    if (ranks->identity && world < ranks->size) {
        *local = world;
        return OTFX_OK;
    }
    if (!ranks->identity) {
        rank_pair key = {world, 0};
        const rank_pair *found =
            otfx_otf2_search(&key, ranks->by_world, ranks->size, sizeof key, compare_rank_pairs);
        if (found) {
            *local = found->local;
            return OTFX_OK;
        }
    }
    return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: world rank %u is not a member of communicator %u", world,
                     comm);
}

static otfx_status metric_type_of(exporter *x, otfx_ref metric, OTF2_Type *type)
{
    if (metric >= x->known_metrics) {
        uint32_t count = otfx_defs_count_metrics(x->defs);
        if (metric >= count)
            return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: event refers to undefined metric %u", metric);
        if (!otfx_reserve((void **)&x->metric_types, &x->metric_type_capacity, count, sizeof *x->metric_types,
                          16))
            return out_of_memory();
        for (uint32_t m = x->known_metrics; m < count; m++) {
            otfx_metric_def def = {0};
            OTFX_TRY(otfx_defs_get_metric(x->defs, m, &def));
            x->metric_types[m] = def.type;
        }
        x->known_metrics = count;
    }
    switch (x->metric_types[metric]) {
    case OTFX_METRIC_INT64:
        *type = OTF2_TYPE_INT64;
        return OTFX_OK;
    case OTFX_METRIC_UINT64:
        *type = OTF2_TYPE_UINT64;
        return OTFX_OK;
    case OTFX_METRIC_DOUBLE:
        *type = OTF2_TYPE_DOUBLE;
        return OTFX_OK;
    }
    return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: metric %u has an unknown value type", metric);
}

/* ---------------------------------------------------------------------------------------------
 * Event records: one writer per payload shape of OTFX_OTF2_RECORD_TABLE
 * -------------------------------------------------------------------------------------------- */

static otfx_status write_REGION(trace_export *te, otfx_otf2_REGION_writer record, OTF2_TimeStamp time,
                                const otfx_event *event)
{
    OTFX_TRY(check_region(te->x, event->u.region.region));
    OTF2_TRY(record(te->writer, NULL, time, REGION_REF_OFFSET + event->u.region.region),
             "writing a region event");
    return OTFX_OK;
}

static otfx_status write_MESSAGE(trace_export *te, otfx_otf2_MESSAGE_writer record, OTF2_TimeStamp time,
                                 const otfx_event *event)
{
    uint32_t peer = 0;
    OTFX_TRY(comm_rank_of(te->x, event->u.msg.comm, event->u.msg.peer, &peer));
    OTF2_TRY(record(te->writer, NULL, time, peer, event->u.msg.comm, event->u.msg.tag, event->u.msg.bytes),
             "writing a message event");
    return OTFX_OK;
}

static otfx_status write_MESSAGE_REQUEST(trace_export *te, otfx_otf2_MESSAGE_REQUEST_writer record,
                                         OTF2_TimeStamp time, const otfx_event *event)
{
    uint32_t peer = 0;
    OTFX_TRY(comm_rank_of(te->x, event->u.msg.comm, event->u.msg.peer, &peer));
    OTF2_TRY(record(te->writer, NULL, time, peer, event->u.msg.comm, event->u.msg.tag, event->u.msg.bytes,
                    event->u.msg.request),
             "writing a nonblocking message event");
    return OTFX_OK;
}

static otfx_status write_REQUEST(trace_export *te, otfx_otf2_REQUEST_writer record, OTF2_TimeStamp time,
                                 const otfx_event *event)
{
    OTF2_TRY(record(te->writer, NULL, time, event->u.request.request), "writing a request event");
    return OTFX_OK;
}

static otfx_status write_NONE(trace_export *te, otfx_otf2_NONE_writer record, OTF2_TimeStamp time,
                              const otfx_event *event)
{
    (void)event;
    OTF2_TRY(record(te->writer, NULL, time), "writing a collective begin");
    return OTFX_OK;
}

/* The root as a rank of the collective's communicator (OTF2's numbering). */
static otfx_status collective_root(trace_export *te, const otfx_event *event, uint32_t *root)
{
    const comm_ranks *ranks = NULL; /* also checks that the communicator is defined when there is no root */
    OTFX_TRY(comm_ranks_get(te->x, event->u.coll.comm, &ranks));
    *root = OTF2_UNDEFINED_UINT32; /* otfx and OTF2 both use UINT32_MAX for "no root" */
    if (event->u.coll.root != UINT32_MAX)
        OTFX_TRY(comm_rank_of(te->x, event->u.coll.comm, event->u.coll.root, root));
    return OTFX_OK;
}

static otfx_status write_COLLECTIVE(trace_export *te, otfx_otf2_COLLECTIVE_writer record, OTF2_TimeStamp time,
                                    const otfx_event *event)
{
    uint32_t root;
    OTFX_TRY(collective_root(te, event, &root));
    OTF2_TRY(record(te->writer, NULL, time, (OTF2_CollectiveOp)event->u.coll.op, event->u.coll.comm, root,
                    event->u.coll.sent, event->u.coll.received),
             "writing a collective end");
    return OTFX_OK;
}

static otfx_status write_COLLECTIVE_REQUEST(trace_export *te, otfx_otf2_COLLECTIVE_REQUEST_writer record,
                                            OTF2_TimeStamp time, const otfx_event *event)
{
    uint32_t root;
    OTFX_TRY(collective_root(te, event, &root));
    OTF2_TRY(record(te->writer, NULL, time, (OTF2_CollectiveOp)event->u.coll.op, event->u.coll.comm, root,
                    event->u.coll.sent, event->u.coll.received, event->u.coll.request),
             "writing a nonblocking collective's completion");
    return OTFX_OK;
}

static otfx_status write_METRIC(trace_export *te, otfx_otf2_METRIC_writer record, OTF2_TimeStamp time,
                                const otfx_event *event)
{
    OTF2_Type type = OTF2_TYPE_NONE;
    OTFX_TRY(metric_type_of(te->x, event->u.metric.metric, &type));
    OTF2_MetricValue value;
    value.unsigned_int = event->u.metric.value; /* the event holds the value's bits */
    OTF2_TRY(record(te->writer, NULL, time, event->u.metric.metric, 1, &type, &value),
             "writing a metric event");
    return OTFX_OK;
}

otfx_status export_add_attribute(exporter *x, otfx_otf2_attribute attribute, OTF2_AttributeValue value)
{
    OTF2_TRY(OTF2_AttributeList_AddAttribute(x->attributes, attribute, otfx_otf2_attributes[attribute].type,
                                             value),
             "adding an attribute");
    return OTFX_OK;
}

static otfx_status write_phase(trace_export *te, OTF2_TimeStamp time, const otfx_event *event)
{
    OTFX_TRY(check_region(te->x, event->u.phase.region));
    OTF2_AttributeValue value;
    value.int64 = event->u.phase.value;
    OTFX_TRY(export_add_attribute(te->x, OTFX_OTF2_ATTR_PHASE_VALUE, value));
    OTF2_RegionRef region = REGION_REF_OFFSET + event->u.phase.region;
    OTF2_TRY(OTF2_EvtWriter_Enter(te->writer, te->x->attributes, time, region), "writing a phase marker");
    OTF2_TRY(OTF2_EvtWriter_Leave(te->writer, NULL, time, region), "writing a phase marker");
    return OTFX_OK;
}

/* Writes the record(s) of one event that is not a reduction record. */
otfx_status export_write_event(trace_export *te, OTF2_TimeStamp time, const otfx_event *event)
{
    switch (event->type) {
#define OTFX_WRITE_RECORD(otfx_type, record, printed, payload)                                               \
    case otfx_type:                                                                                          \
        return write_##payload(te, OTF2_EvtWriter_##record, time, event);
        OTFX_OTF2_RECORD_TABLE(OTFX_WRITE_RECORD)
#undef OTFX_WRITE_RECORD
    case OTFX_EV_PHASE:
        return write_phase(te, time, event);
    default:
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: unknown event type %d", (int)event->type);
    }
}
