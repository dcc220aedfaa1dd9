#!/usr/bin/python3
"""extract_table.py — derive capture/mpi_functions.tsv from the MPI headers (and libmpichfort).

Run by hand when the MPI implementation changes; the build only reads the committed table:

    /usr/bin/python3 capture/gen/extract_table.py > capture/mpi_functions.tsv

Every MPI_*/MPIX_* function that <mpi.h> declares (after preprocessing, so #if blocks of mpio.h are
respected) gets one row. The event class and payload rule come from the lists below; everything not
listed is "other" (enter/leave only). The f08 column lists the mpi_f08 entry points of libmpichfort
that call PMPI_<name> directly (found by disassembling the library), which therefore need wrappers of
their own; the mpif.h / `use mpi` bindings and the mpi_f08 buffer routines (*_f08ts_) call the C MPI_*
symbols and are traced by the C wrappers.
"""
import collections
import re
import shutil
import subprocess
import sys

MPI_INCLUDE = "/usr/include/x86_64-linux-gnu/mpich"
FORTRAN_LIB = "/usr/lib/x86_64-linux-gnu/libmpichfort.so.12"

# Hand-written in capture/src/manual_wrappers.c: they cannot follow the generic pattern.
MANUAL = {
    "MPI_Init": "splits the world; places never return",
    "MPI_Init_thread": "splits the world; places never return",
    "MPI_Finalize": "sends the goodbye batch before the real finalize",
    "MPI_Abort": "must abort the real world, places included",
    "MPI_Pcontrol": "variadic; becomes a phase marker",
    "MPI_Comm_get_attr": "predefined attributes exist only on the real MPI_COMM_WORLD",
    "MPI_Attr_get": "predefined attributes exist only on the real MPI_COMM_WORLD",
}

P2P = {
    "p2p-send": ["MPI_Send", "MPI_Bsend", "MPI_Ssend", "MPI_Rsend"],
    "p2p-isend": ["MPI_Isend", "MPI_Ibsend", "MPI_Issend", "MPI_Irsend"],
    "p2p-recv": ["MPI_Recv"],
    "p2p-irecv": ["MPI_Irecv"],
    "p2p-mrecv": ["MPI_Mrecv"],
    "p2p-imrecv": ["MPI_Imrecv"],
    "p2p-sendrecv": ["MPI_Sendrecv", "MPI_Sendrecv_replace"],
    "probe": ["MPI_Probe", "MPI_Iprobe", "MPI_Mprobe", "MPI_Improbe"],
    "persistent-send": ["MPI_Send_init", "MPI_Bsend_init", "MPI_Ssend_init", "MPI_Rsend_init"],
    "persistent-recv": ["MPI_Recv_init"],
}
P2P_PAYLOAD = {
    "p2p-send": "peer=dest tag=tag bytes=count*datatype",
    "p2p-isend": "peer=dest tag=tag bytes=count*datatype",
    "persistent-send": "peer=dest tag=tag bytes=count*datatype",
    "p2p-recv": "status source=source",
    "p2p-mrecv": "status",
    "p2p-irecv": "peer=source tag=tag bytes=count*datatype",
    "persistent-recv": "peer=source tag=tag bytes=count*datatype",
    "p2p-imrecv": "bytes=count*datatype",
    "probe": "status",
}
REQUESTS = {
    "completion": ["MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall",
                   "MPI_Testany", "MPI_Testsome"],
    "start": ["MPI_Start", "MPI_Startall"],
    "request-free": ["MPI_Request_free"],
}

# Collectives: root parameter and the bytes of this rank's own send and receive buffers as the
# arguments describe them. n = size of the (remote) group, in/out = neighbourhood degrees,
# sum(a) adds an array over n (or in/out) entries, sumw(a,t) adds a[i] * size(t[i]),
# a[rank] is this rank's entry, @root / @nonroot limit a term to where it is significant.
COLLECTIVES = {
    "MPI_Barrier": "",
    "MPI_Bcast": "root=root send=count*datatype@root recv=count*datatype@nonroot",
    "MPI_Reduce": "root=root send=count*datatype recv=count*datatype@root",
    "MPI_Allreduce": "send=count*datatype recv=count*datatype",
    "MPI_Gather": "root=root send=sendcount*sendtype recv=recvcount*recvtype*n@root",
    "MPI_Gatherv": "root=root send=sendcount*sendtype recv=sum(recvcounts)*recvtype@root",
    "MPI_Scatter": "root=root send=sendcount*sendtype*n@root recv=recvcount*recvtype",
    "MPI_Scatterv": "root=root send=sum(sendcounts)*sendtype@root recv=recvcount*recvtype",
    "MPI_Allgather": "send=sendcount*sendtype recv=recvcount*recvtype*n",
    "MPI_Allgatherv": "send=sendcount*sendtype recv=sum(recvcounts)*recvtype",
    "MPI_Alltoall": "send=sendcount*sendtype*n recv=recvcount*recvtype*n",
    "MPI_Alltoallv": "send=sum(sendcounts)*sendtype recv=sum(recvcounts)*recvtype",
    "MPI_Alltoallw": "send=sumw(sendcounts,sendtypes) recv=sumw(recvcounts,recvtypes)",
    "MPI_Reduce_scatter": "send=sum(recvcounts)*datatype recv=recvcounts[rank]*datatype",
    "MPI_Reduce_scatter_block": "send=recvcount*datatype*n recv=recvcount*datatype",
    "MPI_Scan": "send=count*datatype recv=count*datatype",
    "MPI_Exscan": "send=count*datatype recv=count*datatype",
    "MPI_Neighbor_allgather": "send=sendcount*sendtype recv=recvcount*recvtype*in",
    "MPI_Neighbor_allgatherv": "send=sendcount*sendtype recv=sum_in(recvcounts)*recvtype",
    "MPI_Neighbor_alltoall": "send=sendcount*sendtype*out recv=recvcount*recvtype*in",
    "MPI_Neighbor_alltoallv": "send=sum_out(sendcounts)*sendtype recv=sum_in(recvcounts)*recvtype",
    "MPI_Neighbor_alltoallw": "send=sumw_out(sendcounts,sendtypes) recv=sumw_in(recvcounts,recvtypes)",
}

# Calls that create a communicator: the parameter that receives it.
COMM_CREATE = {
    "MPI_Comm_dup": "newcomm", "MPI_Comm_dup_with_info": "newcomm", "MPI_Comm_create": "newcomm",
    "MPI_Comm_create_group": "newcomm", "MPI_Comm_split": "newcomm", "MPI_Comm_split_type": "newcomm",
    "MPI_Comm_create_from_group": "newcomm", "MPI_Cart_create": "comm_cart", "MPI_Cart_sub": "newcomm",
    "MPI_Graph_create": "comm_graph", "MPI_Dist_graph_create": "comm_dist_graph",
    "MPI_Dist_graph_create_adjacent": "comm_dist_graph", "MPI_Intercomm_create": "newintercomm",
    "MPI_Intercomm_create_from_groups": "newintercomm", "MPI_Intercomm_merge": "newintracomm",
    "MPI_Comm_accept": "newcomm", "MPI_Comm_connect": "newcomm", "MPI_Comm_spawn": "intercomm",
    "MPI_Comm_spawn_multiple": "intercomm", "MPI_Comm_join": "intercomm", "MPIX_Comm_shrink": "newcomm",
}
# Nonblocking creation: the communicator exists when the request completes.
COMM_ICREATE = {"MPI_Comm_idup": "newcomm", "MPI_Comm_idup_with_info": "newcomm"}
COMM_FREE = {"MPI_Comm_free": "comm", "MPI_Comm_disconnect": "comm"}


def base_name(name):
    """MPI_Isend_c -> MPI_Isend: the large-count variants share their class with the base function."""
    return name[:-2] if name.endswith("_c") else name


def classify(name):
    if re.search(r"_(f2c|c2f|f082c|c2f08|f2f08|f082f)$", name):
        # Handle conversions: the Fortran bindings call them inside other calls, so they pass through
        # without events (an application's own conversions are not communication either).
        return "conversion", ""
    if name in MANUAL:
        return "manual", MANUAL[name]
    base = base_name(name)
    # A send and a receive; the receive's source, tag and bytes as posted too (MPICH 4.0.2 leaves the
    # status of MPI_Isendrecv empty, and with a place the blocking forms run as it).
    if base == "MPI_Sendrecv":
        return "p2p-sendrecv", ("peer=dest tag=sendtag bytes=sendcount*sendtype status source=source "
                                "recvtag=recvtag recvbytes=recvcount*recvtype")
    if base == "MPI_Sendrecv_replace":
        return "p2p-sendrecv", ("peer=dest tag=sendtag bytes=count*datatype status source=source recvtag=recvtag "
                                "recvbytes=count*datatype")
    if base == "MPI_Isendrecv":
        return "p2p-isendrecv", ("peer=dest tag=sendtag bytes=sendcount*sendtype source=source recvtag=recvtag "
                                 "recvbytes=recvcount*recvtype")
    if base == "MPI_Isendrecv_replace":
        return "p2p-isendrecv", ("peer=dest tag=sendtag bytes=count*datatype source=source recvtag=recvtag "
                                 "recvbytes=count*datatype")
    for cls, names in P2P.items():
        if base in names:
            return cls, P2P_PAYLOAD[cls]
    for cls, names in REQUESTS.items():
        if name in names:
            return cls, ""
    for prefix, cls in (("", "collective"), ("I", "icollective")):
        for coll, rule in COLLECTIVES.items():
            if prefix and base == "MPI_I" + coll[4:].lower():
                return cls, rule
            if not prefix and base == coll:
                return cls, rule
            if not prefix and base == coll + "_init":
                return "collective-init", rule
    if name in COMM_CREATE:
        return "comm-create", "new=" + COMM_CREATE[name]
    if name in COMM_ICREATE:
        return "comm-icreate", "new=" + COMM_ICREATE[name]
    if name in COMM_FREE:
        return "comm-free", "free=" + COMM_FREE[name]
    return "other", ""


def split_params(text):
    params, depth, current = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        params.append(current.strip())
    return params


def param_name(param):
    match = re.search(r"(\w+)\s*(\[[^\]]*\]\s*)*$", param)
    return match.group(1) if match else None


def read_prototypes():
    preprocessed = subprocess.run(["cc", "-E", "-P", "-I" + MPI_INCLUDE, "-"], input="#include <mpi.h>\n",
                                  capture_output=True, text=True, check=True).stdout
    text = re.sub(r"\s+", " ", preprocessed)
    prototypes = collections.OrderedDict()
    pattern = re.compile(r"(?:(?<=[;}])|^) ?((?:const )?[A-Za-z_]\w*) (P?MPIX?_\w+)\(([^()]*)\)[^;{]*;")
    for match in pattern.finditer(text):
        ret, name, params = match.group(1), match.group(2), match.group(3).strip()
        prototypes[name] = (ret, params)
    return prototypes


def fortran_f08_direct_callers():
    """mpi_*_f08*_ symbol -> the PMPI_* functions it (or its local helpers) calls directly."""
    if not shutil.which("objdump"):
        sys.exit("extract_table.py: objdump not found (binutils)")
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", FORTRAN_LIB], capture_output=True,
                                 text=True, check=True).stdout
    calls, current = collections.defaultdict(set), None
    for line in disassembly.splitlines():
        header = re.match(r"^[0-9a-f]+ <([^>@]+)(@@Base)?>:", line)
        if header:
            current = header.group(1)
            continue
        call = re.search(r"\b(call|jmp)\s+[0-9a-f]+ <([^>]+)>", line)
        if call and current:
            target = call.group(2).replace("@plt", "").replace("@@Base", "").split("+")[0]
            if target != current:
                calls[current].add(target)
    result = {}
    for symbol in calls:
        if not re.match(r"^mpi_\w+_f08(ts)?(_large)?_$", symbol) or "_f08ts" in symbol:
            continue
        pmpi = {t for t in calls[symbol] if t.startswith("PMPI") or t.startswith("MPI")}
        if any(t.startswith("PMPI") for t in pmpi):
            result[symbol] = pmpi
    return result


def main():
    prototypes = read_prototypes()
    f08 = collections.defaultdict(list)
    unsupported_f08 = []
    for symbol, targets in sorted(fortran_f08_direct_callers().items()):
        names = {t[1:] for t in targets if t.startswith("PMPI")}
        # MPI_File_f2c/c2f only convert ROMIO's pointer handles to Fortran integers and back.
        conversions = {t for t in targets if t.startswith("MPI")} - {"MPI_File_f2c", "MPI_File_c2f"}
        if len(names) == 1 and not conversions:
            f08[names.pop()].append(symbol)
        else:
            unsupported_f08.append(f"{symbol}:{'+'.join(sorted(targets))}")
    print("# name\treturn\tparameters\tclass\tpayload\ttranslate\tf08\timplementation")
    for name, (ret, params) in prototypes.items():
        if not name.startswith("MPI") or name.startswith("PMPI"):
            continue
        if "P" + name not in prototypes:
            sys.exit(f"extract_table.py: {name} has no P{name}")
        param_list = split_params(params) if params != "void" else []
        translate = [param_name(p) for p in param_list if re.fullmatch(r"MPI_Comm \w+", p)]
        cls, payload = classify(name)
        implementation = "manual" if cls == "manual" else "generated"
        if cls == "manual":
            payload = "-"
        print("\t".join([name, ret, "; ".join(param_list) or "void", cls, payload or "-",
                         ",".join(translate) or "-", ",".join(f08.get(name, [])) or "-", implementation]))
    for entry in unsupported_f08:
        print(f"# f08 entry calling several MPI functions, not wrapped: {entry}")


if __name__ == "__main__":
    main()
