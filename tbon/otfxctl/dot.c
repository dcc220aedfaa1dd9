/*
 * dot.c — `otfxctl structure --dot FILE`: the reply's record lines (docs/protocol.md, structure) as a
 * Graphviz graph. One cluster per group (its representative's task activity graph): nodes labelled with
 * the MPI call or marker, its calling context and visits; solid edges the computation between nodes
 * (count, mean); dashed edges completions; a dotted edge per peer to the group holding the partner
 * (offset, messages and, when known, their mean transfer time).
 */
#include "dot.h"

#include <otfx/protocol.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *get(const otfx_kv_line *kv, const char *key)
{
    const char *value = otfx_kv_get(kv, key);
    return value ? value : "";
}

/* A label's text with the characters Graphviz treats specially escaped. */
static void put_escaped(FILE *out, const char *text)
{
    for (; *text; text++) {
        if (*text == '"' || *text == '\\')
            fputc('\\', out);
        fputc(*text, out);
    }
}

bool write_structure_dot(const char *payload, size_t length, const char *path)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return false;
    fputs("digraph structure {\n  compound=true;\n  node [shape=box, fontname=\"Helvetica\"];\n", out);
    size_t offset = 0;
    const char *line;
    size_t line_length;
    long open_group = -1;
    otfx_text messages = {0};
    while (otfx_kv_next_line(payload, length, &offset, &line, &line_length)) {
        otfx_kv_line kv;
        if (!otfx_kv_parse(line, line_length, &kv))
            continue;
        const char *group = get(&kv, "group");
        const long g = group[0] ? strtol(group, NULL, 10) : -1;
        if (strcmp(kv.type, "group") == 0) {
            if (open_group >= 0)
                fputs("  }\n", out);
            open_group = g;
            fprintf(out, "  subgraph cluster_%ld {\n    label=\"group %ld: ranks ", g, g);
            put_escaped(out, get(&kv, "ranks"));
            fprintf(out, " (%s)\";\n", get(&kv, "members"));
        } else if (strcmp(kv.type, "node") == 0) {
            fprintf(out, "    g%ld_n%s [label=\"", g, get(&kv, "id"));
            put_escaped(out, get(&kv, "name"));
            if (strcmp(get(&kv, "kind"), "phase") == 0)
                fprintf(out, " = %s", get(&kv, "value"));
            const char *context = get(&kv, "context");
            if (strcmp(context, "-") != 0) {
                fputs("\\n", out);
                put_escaped(out, context);
            }
            fprintf(out, "\\n%s visits\"%s];\n", get(&kv, "visits"),
                    strcmp(get(&kv, "kind"), "mpi") == 0 ? "" : ", shape=ellipse");
        } else if (strcmp(kv.type, "edge") == 0) {
            fprintf(out, "    g%ld_n%s -> g%ld_n%s [label=\"%s x %.0f ns\"];\n", g, get(&kv, "from"), g,
                    get(&kv, "to"), get(&kv, "count"), strtod(get(&kv, "mean_ns"), NULL));
        } else if (strcmp(kv.type, "completion") == 0) {
            fprintf(out, "    g%ld_n%s -> g%ld_n%s [style=dashed, label=\"completes %s\"];\n", g,
                    get(&kv, "start"), g, get(&kv, "end"), get(&kv, "count"));
        } else if (strcmp(kv.type, "peer") == 0 && strcmp(get(&kv, "direction"), "send") == 0) {
            /* between clusters: written after all of them */
            const long to = strtol(get(&kv, "peer_group"), NULL, 10);
            char transfer[64] = "";
            if (strtoull(get(&kv, "transfer_count"), NULL, 10) > 0)
                snprintf(transfer, sizeof transfer, ", %.0f ns", strtod(get(&kv, "transfer_mean_ns"), NULL));
            if (to >= 0)
                otfx_text_appendf(
                    &messages,
                    "  g%ld_n%s -> g%ld_n0 [style=dotted, lhead=cluster_%ld, label=\"%+ld: %s msgs%s\"];\n",
                    g, get(&kv, "node"), to, to, strtol(get(&kv, "offset"), NULL, 10), get(&kv, "count"),
                    transfer);
        }
        otfx_kv_line_free(&kv);
    }
    if (open_group >= 0)
        fputs("  }\n", out);
    if (messages.length)
        fwrite(messages.data, 1, messages.length, out);
    otfx_text_free(&messages);
    fputs("}\n", out);
    return fclose(out) == 0;
}
