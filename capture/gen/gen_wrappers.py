#!/usr/bin/python3
"""gen_wrappers.py — generate the MPI wrappers of libotfx-capture from capture/mpi_functions.tsv.

    gen_wrappers.py TABLE OUT_DIR

writes OUT_DIR/capture_functions.h (function ids and names), OUT_DIR/capture_wrappers.c (one C
wrapper per generated row) and OUT_DIR/capture_wrappers_f08.c (the mpi_f08 entry points that call
PMPI_* directly on MPICH). Each event class has one template below; the table says which applies and
which parameters feed the payload. Rows marked "manual" are written by hand in
capture/src/manual_wrappers.c and only get their id here.
"""
import re
import sys
from dataclasses import dataclass

SCALAR_TYPES = {"int", "MPI_Comm", "MPI_Datatype", "MPI_Info", "MPI_Group", "MPI_Win", "MPI_Request",
                "MPI_Errhandler", "MPI_Op", "MPI_Message", "MPI_Session", "MPI_Aint", "MPI_Count",
                "MPI_Offset", "MPI_Fint"}


@dataclass
class Param:
    text: str
    name: str
    base_type: str  # type without const, pointers and array brackets
    pointer: bool   # pointer or array


@dataclass
class Function:
    name: str
    ret: str
    params: list
    cls: str
    payload: str
    translate: list
    f08: list
    manual: bool

    def param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        raise SystemExit(f"gen_wrappers.py: {self.name} has no parameter '{name}' (payload rule)")

    def has(self, name):
        return any(p.name == name for p in self.params)


def parse_param(text):
    if text == "...":
        return Param(text, "...", "...", False)
    match = re.match(r"^(.*?)(\w+)\s*((?:\[[^\]]*\]\s*)*)$", text)
    if not match:
        raise SystemExit(f"gen_wrappers.py: cannot parse parameter '{text}'")
    type_text, name, arrays = match.group(1).strip(), match.group(2), match.group(3)
    pointer = "*" in type_text or bool(arrays)
    base = re.sub(r"\bconst\b", "", type_text).replace("*", "").strip()
    return Param(text, name, base, pointer)


F08_SEVERAL_CALLS_NOTE = "# f08 entry calling several MPI functions, not wrapped: "
F08_SEVERAL_CALLS = []  # "symbol:PMPI_A+PMPI_B", from the table's notes


def read_table(path):
    functions = []
    with open(path) as table:
        for line in table:
            if line.startswith(F08_SEVERAL_CALLS_NOTE):
                F08_SEVERAL_CALLS.append(line[len(F08_SEVERAL_CALLS_NOTE):].strip())
            if line.startswith("#") or not line.strip():
                continue
            name, ret, params, cls, payload, translate, f08, implementation = line.rstrip("\n").split("\t")
            plist = [] if params == "void" else [parse_param(p) for p in params.split("; ")]
            functions.append(Function(name, ret, plist, cls, "" if payload == "-" else payload,
                                      [] if translate == "-" else translate.split(","),
                                      [] if f08 == "-" else f08.split(","), implementation == "manual"))
    return functions


def fid(function):
    return f"CAPTURE_FN_{function.name}"


def signature(function, name=None):
    params = ", ".join(p.text for p in function.params) or "void"
    return f"{function.ret} {name or function.name}({params})"


def call_args(function):
    return ", ".join(p.name for p in function.params)


# ---- payload expressions -------------------------------------------------------------------------

def count_expr(function, name):
    """A count, datatype or array term of a payload rule as a C expression (bytes as int64_t)."""
    p = function.param(name)
    if p.base_type == "MPI_Datatype":
        return f"capture_type_bytes({name})"
    return f"(int64_t){name}"


def sum_call(function, kind, array, types=None, extent="capture_n"):
    p = function.param(array)
    suffix = "count" if p.base_type == "MPI_Count" else "int"
    if types:
        return f"capture_sumw_{suffix}({array}, {types}, {extent})"
    return f"capture_sum_{suffix}({array}, {extent})"


def bytes_expr(function, expression):
    factors = []
    for factor in expression.split("*"):
        match = re.fullmatch(r"(sumw?)(_in|_out)?\((\w+)(?:,(\w+))?\)", factor)
        if match:
            extent = {"": "capture_n", "_in": "capture_indegree", "_out": "capture_outdegree"}[match.group(2) or ""]
            factors.append(sum_call(function, match.group(1), match.group(3), match.group(4), extent))
        elif re.fullmatch(r"(\w+)\[rank\]", factor):
            factors.append(f"(int64_t){factor[:-6]}[capture_comm_entry->rank]")
        elif factor == "n":
            factors.append("(int64_t)capture_n")
        elif factor in ("in", "out"):
            factors.append(f"(int64_t)capture_{factor}degree")
        else:
            factors.append(count_expr(function, factor))
    return " * ".join(factors)


def guarded_bytes(function, side, rule):
    """send=/recv= term: evaluated only where significant and never on MPI_IN_PLACE arguments, whose
    count and datatype the caller may leave undefined."""
    expression, _, significance = rule.partition("@")
    conditions = []
    names = re.findall(r"[a-z_]+", expression)
    if function.has(side + "buf") and any(n.startswith(side) for n in names):
        conditions.append(f"{side}buf != MPI_IN_PLACE")
    if significance == "root":
        conditions.append("capture_is_root(capture_comm_entry, root)")
    elif significance == "nonroot":
        conditions.append("capture_is_nonroot(capture_comm_entry, root)")
    code = bytes_expr(function, expression)
    if conditions:
        return f"({' && '.join(conditions)}) ? {code} : 0"
    return code


def parse_rule(payload):
    rule = {}
    for token in payload.split():
        key, _, value = token.partition("=")
        rule[key] = value
    return rule


def collective_payload(function, indent="    "):
    """Lines that compute root/bytes of a collective into a struct capture_collective_info."""
    rule = parse_rule(function.payload)
    uses = function.payload
    lines = [f"const struct capture_comm *capture_comm_entry = capture_comm_lookup(comm);",
             "struct capture_collective_info capture_info = {.comm_id = capture_comm_entry->id, .root_world = -1};"]
    if re.search(r"\bn\b|sumw?\(", uses):
        lines.append("const int capture_n = capture_comm_peer_count(capture_comm_entry);")
    if re.search(r"\b(in|out)\b|_in\(|_out\(", uses):
        lines.append("int capture_indegree = 0, capture_outdegree = 0;")
        lines.append("capture_comm_neighbor_degrees(comm, &capture_indegree, &capture_outdegree);")
        lines.append("(void)capture_indegree;")
        lines.append("(void)capture_outdegree;")
    if "root" in rule:
        lines.append(f"capture_info.root_world = capture_root_world(capture_comm_entry, {rule['root']});")
    if "send" in rule:
        lines.append(f"capture_info.bytes_sent = {guarded_bytes(function, 'send', rule['send'])};")
    if "recv" in rule:
        lines.append(f"capture_info.bytes_received = {guarded_bytes(function, 'recv', rule['recv'])};")
    return [indent + line for line in lines]


def p2p_payload(function):
    rule = parse_rule(function.payload)
    peer = rule.get("peer", "MPI_ANY_SOURCE")
    tag = rule.get("tag", "MPI_ANY_TAG")
    byte_count = bytes_expr(function, rule["bytes"]) if "bytes" in rule else "0"
    return peer, tag, byte_count


# ---- C wrappers ----------------------------------------------------------------------------------

def body_lines(function, record=True):
    """The path of a wrapper between capture_enter and capture_leave; sets `capture_result`. With
    record=False the same bookkeeping for a call that is not recorded while the rank has a place
    (recorder.h: message ordinals and the request table go on whatever is recorded); None for classes
    that need none (the call is then just the PMPI call)."""
    f, args, cls = function, call_args(function), function.cls
    call = f"{callee(f)}({args})"
    rec = "true" if record else "false"
    # A send's record carries the call's ENTER time (otfx/capture_wire.h, CAPTURE_RECORD_SEND): read before
    # the PMPI call, which may record other things (steering markers, callbacks).
    entered = "capture_send_time" if record else "0"
    send_time = ["    const uint64_t capture_send_time = capture_entered;"] if record else []
    lines = []
    if cls in ("p2p-send",):
        peer, tag, nbytes = p2p_payload(f)
        lines += send_time + [f"    capture_result = {call};",
                              "    if (capture_result == MPI_SUCCESS)",
                              f"        capture_p2p_send({fid(f)}, comm, {peer}, {tag}, {nbytes}, {entered}, {rec});"]
    elif cls in ("p2p-recv", "p2p-mrecv", "p2p-sendrecv", "probe"):
        if cls == "p2p-sendrecv":
            lines += send_time
        lines += ["    MPI_Status capture_local_status;",
                  "    if (status == MPI_STATUS_IGNORE)",
                  "        status = &capture_local_status;"]
        if cls == "p2p-mrecv":
            # Taken before PMPI consumes the handle: MPI may give it to another thread's probe at once.
            lines += ["    const MPI_Comm capture_probed_comm = capture_message_take(*message);"]
        lines += [f"    capture_result = {call};", "    if (capture_result == MPI_SUCCESS) {"]
        if cls == "p2p-sendrecv":
            peer, tag, nbytes = p2p_payload(f)
            rule = parse_rule(f.payload)
            lines += [f"        capture_p2p_send({fid(f)}, comm, {peer}, {tag}, {nbytes}, {entered}, {rec});",
                      f"        capture_p2p_sendrecv_received({fid(f)}, comm, {rule['source']}, {rule['recvtag']},",
                      f"                                      {bytes_expr(f, rule['recvbytes'])}, status, {rec});"]
        elif cls == "p2p-recv":
            lines += [f"        capture_p2p_recv({fid(f)}, comm, {parse_rule(f.payload)['source']}, status, {rec});"]
        elif cls == "p2p-mrecv":
            lines += [f"        capture_message_received_on({fid(f)}, capture_probed_comm, status, {rec});"]
        else:  # probes
            flag = "*flag" if f.has("flag") else "1"
            message = "*message" if f.has("message") else "MPI_MESSAGE_NULL"
            lines += [f"        if ({flag})",
                      f"            capture_probe({fid(f)}, comm, status, {message}, {rec});"]
        lines += ["    }"]
        if cls == "p2p-sendrecv":
            # Only the receive failed: the message went out and its receiver records it.
            lines += ["    else if (capture_sendrecv_sent(capture_result))",
                      f"        capture_p2p_send({fid(f)}, comm, {peer}, {tag}, {nbytes}, {entered}, {rec});"]
    elif cls in ("p2p-isend", "p2p-irecv", "persistent-send", "persistent-recv"):
        peer, tag, nbytes = p2p_payload(f)
        kind = "CAPTURE_REQUEST_SEND" if "send" in cls else "CAPTURE_REQUEST_RECV"
        persistent = "true" if cls.startswith("persistent") else "false"
        lines += (send_time if cls == "p2p-isend" else []) + [
            f"    capture_result = {call};",
            "    if (capture_result == MPI_SUCCESS)",
            f"        capture_p2p_request({fid(f)}, *request, {kind}, {persistent}, comm, {peer}, {tag},",
            f"                            {nbytes}, {entered if cls == 'p2p-isend' else '0'}, {rec});"]
    elif cls == "p2p-isendrecv":
        rule = parse_rule(f.payload)
        peer, tag, nbytes = p2p_payload(f)
        recv_bytes = bytes_expr(f, rule["recvbytes"])
        lines += send_time + [
            f"    capture_result = {call};",
            "    if (capture_result == MPI_SUCCESS)",
            f"        capture_p2p_sendrecv_request({fid(f)}, *request, comm, {peer}, {tag}, {nbytes},",
            f"                                     {rule['source']}, {rule['recvtag']}, {recv_bytes}, {entered}, {rec});"]
    elif cls == "p2p-imrecv":
        lines += ["    const MPI_Comm capture_probed_comm = capture_message_take(*message);",
                  f"    capture_result = {call};",
                  "    if (capture_result == MPI_SUCCESS)",
                  f"        capture_message_request_on({fid(f)}, capture_probed_comm, *request, {rec});"]
    elif cls in ("collective", "icollective", "collective-init"):
        if not record:
            # Instance ordinals count unrecorded collectives too (channels.h, capture_collective_next).
            if cls == "collective":
                return [f"    capture_result = {call};",
                        "    if (capture_result == MPI_SUCCESS)",
                        "        capture_collective_unrecorded(comm);"]
            persistent = "true" if cls == "collective-init" else "false"
            return [f"    capture_result = {call};",
                    "    if (capture_result == MPI_SUCCESS)",
                    f"        capture_collective_request_unrecorded(comm, *request, {persistent});"]
        lines += ["    {"]
        lines += collective_payload(f, "        ")
        lines += [f"        capture_result = {call};",
                  "        if (capture_result == MPI_SUCCESS) {"]
        if cls != "collective-init":  # a persistent one counts at each start
            lines += ["            capture_info.sequence = capture_collective_next(capture_info.comm_id);"]
        if cls == "collective":
            lines += [f"            capture_collective({fid(f)}, &capture_info);"]
        elif cls == "icollective":
            lines += [f"            capture_collective({fid(f)}, &capture_info);",
                      f"            capture_collective_request({fid(f)}, *request, &capture_info, false);"]
        else:
            lines += [f"            capture_collective_request({fid(f)}, *request, &capture_info, true);"]
        lines += ["        }", "    }"]
    elif cls == "completion":
        lines += completion_lines(f, rec)
    elif cls == "start":
        if f.name == "MPI_Start":
            lines += send_time + ["    const MPI_Request capture_started = *request;",
                                  f"    capture_result = {call};",
                                  "    if (capture_result == MPI_SUCCESS)",
                                  f"        capture_requests_started({fid(f)}, &capture_started, 1, {entered}, {rec});"]
        else:
            lines += send_time + [f"    capture_result = {call};",
                                  "    if (capture_result == MPI_SUCCESS)",
                                  f"        capture_requests_started({fid(f)}, array_of_requests, count, {entered}, {rec});"]
    elif cls == "request-free":
        # Forgotten before the call: once freed, MPI may give the handle to another thread's request.
        lines += ["    capture_request_forget(*request);",
                  f"    capture_result = {call};"]
    elif cls == "comm-create":
        new = parse_rule(f.payload)["new"]
        lines += [f"    capture_result = {call};",
                  f"    if (capture_result == MPI_SUCCESS && *{new} != MPI_COMM_NULL)",
                  f"        capture_comm_created({fid(f)}, *{new}, {rec});"]
    elif cls == "comm-icreate":
        new = parse_rule(f.payload)["new"]
        lines += [f"    capture_result = {call};",
                  "    if (capture_result == MPI_SUCCESS)",
                  f"        capture_comm_request({fid(f)}, *request, {new}, {rec});"]
    elif cls == "comm-free":
        if not record:
            return None  # c_wrapper forgets the communicator itself
        freed = parse_rule(f.payload)["free"]
        lines += [f"    capture_comm_freed({fid(f)}, *{freed});",
                  f"    capture_result = {call};"]
    elif cls == "other":
        if not record:
            return None
        lines += [f"    capture_result = {call};"]
    else:
        raise SystemExit(f"gen_wrappers.py: {f.name}: unknown class {cls}")
    return lines


def completion_lines(f, rec):
    """Wait/Test family: keep the request handles (PMPI sets completed ones to MPI_REQUEST_NULL) and
    make sure there are statuses to read the receives' source, tag and size from. At
    MPI_THREAD_MULTIPLE the tracked entries are copied before the call and completions reported by
    index into that copy (runtime.h, capture_requests_snapshot)."""
    call = f"{callee(f)}({call_args(f)})"
    fn = fid(f)
    # A Test call completes only what it reports as done; a Wait call always completes.
    done = "*flag" if f.name.startswith("MPI_Test") else "1"
    status_fallback = ["    MPI_Status capture_local_status;",
                       "    if (status == MPI_STATUS_IGNORE)",
                       "        status = &capture_local_status;"]

    def snapshot(requests, count):
        return [f"    if (__builtin_expect(capture_threads_concurrent, 0))",
                f"        capture_requests_snapshot({requests}, {count});"]

    if f.name in ("MPI_Wait", "MPI_Test"):
        return status_fallback + [
                "    const MPI_Request capture_request = *request;"] + snapshot("&capture_request", "1") + [
                f"    capture_result = {call};",
                f"    if (capture_result == MPI_SUCCESS && {done})",
                f"        capture_request_completed_at({fn}, 0, capture_request, status, {rec});"]
    if f.name in ("MPI_Waitany", "MPI_Testany"):
        return status_fallback + [
                "    MPI_Request *capture_saved = capture_save_requests(array_of_requests, count);"] + \
            snapshot("capture_saved", "count") + [
                f"    capture_result = {call};",
                f"    if (capture_result == MPI_SUCCESS && {done} && *indx != MPI_UNDEFINED)",
                f"        capture_request_completed_at({fn}, *indx, capture_saved[*indx], status, {rec});"]
    if f.name in ("MPI_Waitall", "MPI_Testall"):
        return ["    MPI_Request *capture_saved = capture_save_requests(array_of_requests, count);"] + \
            snapshot("capture_saved", "count") + [
                "    if (array_of_statuses == MPI_STATUSES_IGNORE)",
                "        array_of_statuses = capture_scratch_statuses(count);",
                f"    capture_result = {call};",
                f"    if ((capture_result == MPI_SUCCESS || capture_result == MPI_ERR_IN_STATUS) && {done})",
                "        for (int i = 0; i < count; i++)",
                # After a failed request MPICH leaves the later ones active (MPI_ERR_PENDING): not completed.
                "            if (capture_result == MPI_SUCCESS || array_of_statuses[i].MPI_ERROR != MPI_ERR_PENDING)",
                f"                capture_request_completed_at({fn}, i, capture_saved[i], &array_of_statuses[i], {rec});"]
    if f.name in ("MPI_Waitsome", "MPI_Testsome"):
        return ["    MPI_Request *capture_saved = capture_save_requests(array_of_requests, incount);"] + \
            snapshot("capture_saved", "incount") + [
                "    if (array_of_statuses == MPI_STATUSES_IGNORE)",
                "        array_of_statuses = capture_scratch_statuses(incount);",
                f"    capture_result = {call};",
                "    if ((capture_result == MPI_SUCCESS || capture_result == MPI_ERR_IN_STATUS) && *outcount != MPI_UNDEFINED)",
                "        for (int i = 0; i < *outcount; i++)",
                f"            capture_request_completed_at({fn}, array_of_indices[i], capture_saved[array_of_indices[i]],",
                f"                                         &array_of_statuses[i], {rec});"]
    raise SystemExit(f"gen_wrappers.py: no completion template for {f.name}")


# The table's classes → the steering event classes (otfx/capture_wire.h enum capture_event_class, the same
# bits as otfx_event_class): `enable|disable p2p|collective|mpi-other` switch these.
EVENT_CLASS_BITS = {
    "CAPTURE_CLASS_P2P": ("p2p-send", "p2p-recv", "p2p-sendrecv", "p2p-isend", "p2p-irecv", "p2p-mrecv",
                          "p2p-imrecv", "p2p-isendrecv", "probe", "persistent-send", "persistent-recv", "start",
                          "completion", "request-free"),
    "CAPTURE_CLASS_COLLECTIVE": ("collective", "icollective", "collective-init"),
    "CAPTURE_CLASS_OTHER_MPI": ("comm-create", "comm-icreate", "comm-free", "other"),
}


def event_class(function):
    for bit, classes in EVENT_CLASS_BITS.items():
        if function.cls in classes:
            return bit
    raise SystemExit(f"gen_wrappers.py: {function.name}: class {function.cls} has no event class")


# ---- blocking calls that stay steerable ----------------------------------------------------------
# A rank blocked inside MPI (waiting for a message of a paused rank, or in a collective with it) must
# still notice APP_PAUSE and the other commands. With a place, the blocking calls below run as their
# nonblocking variant (or their Test/Iprobe form) in a loop that checks for commands between tests and
# yields the core every few tests (steered.c); without one they are the plain PMPI call. The wrapper
# still records the blocking function. Never at the price of another result (steered.h): MPI_Sendrecv
# is built from a receive and a send (MPICH's MPI_Isendrecv leaves the status unfilled), MPI_Waitall
# waits and then calls PMPI_Waitall, and a reduction whose result depends on the order of application
# runs as the blocking call itself behind a steerable barrier.
STEERED_TEST_FORMS = {
    # Wait family: the Test form with the same parameters plus `flag` (Waitsome: done when outcount set);
    # MPI_Waitall has its own loop (capture_waitall_steered). Test, Testany and Testsome complete what
    # they find exactly as their Wait forms would; a test that finds nothing writes nothing. The fourth
    # entry: when the test says so, the blocking call itself returns at once and runs instead — MPICH
    # 4.0.2's MPI_Testany leaves the status as it was when every request is null or inactive, where
    # MPI_Waitany returns an empty one.
    "MPI_Wait": ("PMPI_Test", "request, &capture_flag, status", "capture_flag", None),
    "MPI_Waitany": ("PMPI_Testany", "count, array_of_requests, indx, &capture_flag, status", "capture_flag",
                    "*indx == MPI_UNDEFINED"),
    "MPI_Waitsome": ("PMPI_Testsome", "incount, array_of_requests, outcount, array_of_indices, array_of_statuses",
                     "*outcount != 0", "*outcount == MPI_UNDEFINED"),
    "MPI_Probe": ("PMPI_Iprobe", "source, tag, comm, &capture_flag, status", "capture_flag", None),
    "MPI_Mprobe": ("PMPI_Improbe", "source, tag, comm, &capture_flag, message, status", "capture_flag", None),
}
STEERED_CLASSES = ("collective", "p2p-send", "p2p-recv", "p2p-sendrecv", "p2p-mrecv")
# Blocking calls whose errors MPI reports to their communicator's handler, where MPICH reports a failed
# point-to-point request's to MPI_COMM_WORLD's (capture_wait_steered's errors_on).
STEERED_ERRORS_ON_COMM = ("p2p-send", "p2p-recv", "p2p-sendrecv")
# Wrappers that call a helper of steered.c instead of PMPI (same parameters).
FIDELITY_CALLEES = {
    "MPI_Comm_set_errhandler": "capture_comm_set_errhandler",
    "MPI_Errhandler_set": "capture_errhandler_set",
    "MPI_Grequest_start": "capture_grequest_start",
    "MPIX_Grequest_start": "capture_grequestx_start",
    "MPIX_Grequest_class_allocate": "capture_grequest_class_allocate",
}
FUNCTIONS_BY_NAME = {}


def nonblocking_variant(function):
    """MPI_Allreduce → MPI_Iallreduce, MPI_Recv → MPI_Irecv, …: the same parameters with `status`
    replaced by (or, without one, followed by) `request`; None when the table has no such function."""
    if function.cls not in STEERED_CLASSES:
        return None
    rest = function.name[4:]
    variant = FUNCTIONS_BY_NAME.get("MPI_I" + rest[0].lower() + rest[1:])
    if not variant:
        return None
    expected = [p.name for p in function.params if p.name != "status"] + ["request"]
    return variant if [p.name for p in variant.params] == expected else None


def steered(function):
    return (function.name in STEERED_TEST_FORMS or function.name == "MPI_Waitall" or
            nonblocking_variant(function) is not None)


def callee(function):
    if function.name in FIDELITY_CALLEES:
        return FIDELITY_CALLEES[function.name]
    return f"capture_steered_{function.name}" if steered(function) else f"P{function.name}"


def sendrecv_lines(function):
    """MPI_Sendrecv(_replace)(_c) with a place (steered.h says why not MPI_Isendrecv)."""
    f = function
    large = f.name.endswith("_c")
    if f.name.startswith("MPI_Sendrecv_replace"):
        return ["    return capture_sendrecv_replace_steered(buf, count, datatype, dest, sendtag, source, recvtag, "
                f"comm, status, {'true' if large else 'false'});"]
    suffix = "_c" if large else ""
    return ["    MPI_Request capture_requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};",
            "    int capture_error = MPI_SUCCESS;",
            "    if (source != MPI_PROC_NULL) /* else no receive: capture_sendrecv_complete says why */",
            f"        capture_error = PMPI_Irecv{suffix}(recvbuf, recvcount, recvtype, source, recvtag, comm, "
            "&capture_requests[0]);",
            "    if (capture_error != MPI_SUCCESS)", "        return capture_error;",
            f"    capture_error = PMPI_Isend{suffix}(sendbuf, sendcount, sendtype, dest, sendtag, comm, "
            "&capture_requests[1]);",
            "    if (capture_error != MPI_SUCCESS) {", "        capture_sendrecv_abandon(&capture_requests[0]);",
            "        return capture_error;", "    }",
            "    return capture_sendrecv_complete(capture_requests, status, comm, false);"]


def steered_helper(function):
    """static int capture_steered_MPI_X(params): the plain PMPI call without a place, else the loop."""
    f = function
    out = [f"static int capture_steered_{f.name}({', '.join(p.text for p in f.params)})", "{",
           "    if (!capture_steering_waits())", f"        return P{f.name}({call_args(f)});"]
    if f.name == "MPI_Waitall":
        out += ["    return capture_waitall_steered(count, array_of_requests, array_of_statuses);", "}", ""]
        return out
    if f.name in STEERED_TEST_FORMS:
        test, args, done, blocking_answers = STEERED_TEST_FORMS[f.name]
        out += ["    for (int capture_polls = 0;;) {"]
        if "capture_flag" in args:
            out += ["        int capture_flag = 0;"]
        out += [f"        const int capture_error = {test}({args});"]
        if blocking_answers:
            out += [f"        if (capture_error == MPI_SUCCESS && {done} && {blocking_answers})",
                    f"            return P{f.name}({call_args(f)});"]
        out += [f"        if (capture_error != MPI_SUCCESS || {done})", "            return capture_error;",
                "        capture_wait_pause_point(&capture_polls);", "    }", "}", ""]
        return out
    if f.cls == "p2p-sendrecv":
        return out + sendrecv_lines(f) + ["}", ""]
    if f.cls == "p2p-recv":
        # Returns at once; MPICH 4.0.2's MPI_Irecv from MPI_PROC_NULL completes with source 0 and tag 0.
        out += ["    if (source == MPI_PROC_NULL)", f"        return P{f.name}({call_args(f)});"]
    variant = nonblocking_variant(f)
    args = ", ".join([p.name for p in f.params if p.name != "status"] + ["&capture_request"])
    status = "status" if f.has("status") else "MPI_STATUS_IGNORE"
    errors_on = "comm" if f.cls in STEERED_ERRORS_ON_COMM else "MPI_COMM_NULL"
    nonblocking = ["MPI_Request capture_request;", f"const int capture_error = P{variant.name}({args});",
                   "if (capture_error != MPI_SUCCESS)", "    return capture_error;",
                   f"return capture_wait_steered(&capture_request, {status}, {errors_on});"]
    if f.has("op"):
        # A reduction: its nonblocking algorithm may apply the operation in another order.
        out += ["    if (capture_reduction_exact(op, datatype)) {"] + ["        " + line for line in nonblocking]
        out += ["    }", "    capture_guard_begin(comm);", f"    const int capture_error = P{f.name}({call_args(f)});",
                "    capture_guard_end();", "    return capture_error;", "}", ""]
        return out
    return out + ["    " + line for line in nonblocking] + ["}", ""]


def translate_lines(function):
    return [f"    {name} = capture_application_comm({name});" for name in function.translate]


def c_wrapper(function):
    f = function
    out = [signature(f), "{"]
    out += translate_lines(f)
    call = f"{callee(f)}({call_args(f)})"
    if f.cls == "conversion":
        if f.ret == "int":
            # MPICH defines some conversions (MPI_Status_f2f08, ...) in libmpichfort only: weak, so that
            # C programs linked with -lotfx-capture need no Fortran library.
            out = [f"#pragma weak P{f.name}"] + out
            out += [f"    if (!P{f.name})", "        return MPI_ERR_INTERN;"]
        out += [f"    return {call};", "}", ""]
        return out
    # Inside the tool (nesting.h: application code MPI runs from the tool's own MPI calls) the real
    # function with the application's arguments, nothing else: no record, no bookkeeping, no steering.
    # The helpers of steered.c that keep MPI's answers exact (FIDELITY_CALLEES) still run.
    out += ["    if (capture_inside_tool())",
            f"        return {FIDELITY_CALLEES.get(f.name, 'P' + f.name)}({call_args(f)});"]
    bit = event_class(f)
    # One load and one bit test while nothing is recorded; a recorded call's ENTER timestamp doubles as
    # the steering check (capture_enter), an unrecorded one reads the timer only with a place.
    # (capture_enter is false when its check turned recording or the class off: the call goes unrecorded.)
    out += [f"    if (!capture_records({bit}) || !capture_enter({fid(f)}, {bit})) {{",
            "        capture_untraced_check();"]
    if f.cls == "comm-free":
        # Freed unrecorded: the cache must still forget it, MPI reuses the handle.
        out += [f"        capture_comm_forget(*{parse_rule(f.payload)['free']});"]
    bookkeeping = body_lines(f, record=False) if f.ret == "int" else None
    if bookkeeping:
        # Not recorded, but with a place the rank's counts and tables go on (recorder.h).
        out += ["        if (capture_has_place) {", "            int capture_result;"]
        out += ["        " + line for line in bookkeeping]
        out += ["            return capture_result;", "        }"]
    out += [f"        return {call};", "    }"]
    if f.ret != "int":
        out += [f"    const {f.ret} capture_result = {call};"]
    else:
        out += ["    int capture_result;"]
        out += body_lines(f)
    out += [f"    capture_leave({fid(f)});", "    return capture_result;", "}", ""]
    return out


# ---- mpi_f08 entry points ------------------------------------------------------------------------
# What the entry points below replicate was read off MPICH 4.0.2's own (disassembly of
# libmpichfort.so.12; capture/README.md, "Fortran").

# Fortran strings: gfortran passes character(len=*) as a pointer plus a hidden size_t length, after
# all explicit arguments (after ierror, NULL when absent), in argument order. Input strings (const
# char * in C) lose their leading and trailing blanks and gain a NUL. Output strings: (bytes of the C
# buffer, Fortran characters written back, condition for writing back, lines computing what these
# use), with {len} the hidden length. Where mpi_f08 declares the dummy character(len=MPI_MAX_...),
# MPICH writes exactly that many characters whatever the actual length (here also never more than the
# actual length); elsewhere it writes the actual length. The buffer holds whatever the C function may
# write, for get_nthkey and get_view more than MPICH's own (the Fortran length + 1).


def declared_length(constant):
    return (f"{constant} + 1", f"{{len}} < (size_t){constant} ? {{len}} : (size_t){constant}", None, [])


F08_STRING_OUT = {
    ("MPI_Comm_get_name", "comm_name"): declared_length("MPI_MAX_OBJECT_NAME"),
    ("MPI_Type_get_name", "type_name"): declared_length("MPI_MAX_OBJECT_NAME"),
    ("MPI_Win_get_name", "win_name"): declared_length("MPI_MAX_OBJECT_NAME"),
    ("MPI_Error_string", "string"): declared_length("MPI_MAX_ERROR_STRING"),
    ("MPI_Get_processor_name", "name"): declared_length("MPI_MAX_PROCESSOR_NAME"),
    ("MPI_Get_library_version", "version"): declared_length("MPI_MAX_LIBRARY_VERSION_STRING"),
    ("MPI_Open_port", "port_name"): declared_length("MPI_MAX_PORT_NAME"),
    ("MPI_Lookup_name", "port_name"): declared_length("MPI_MAX_PORT_NAME"),
    ("MPI_Info_get_nthkey", "key"): ("MPI_MAX_INFO_KEY + 1", "{len}", None, []),
    ("MPI_File_get_view", "datarep"): ("MPI_MAX_DATAREP_STRING + 1", "{len}", None, []),
    # character(len=valuelen): valuelen characters, only when the key was found.
    ("MPI_Info_get", "value"): (
        "c_valuelen + 1", "{len} < c_valuelen ? {len} : c_valuelen", "c_flag",
        ["const size_t c_valuelen = *valuelen > 0 ? (size_t)*valuelen : 0;"]),
    # Only when the key was found and buflen was not 0 (a length query).
    ("MPI_Info_get_string", "value"): (
        "c_value_size + 1", "{len}", "c_flag && *buflen != 0",
        ["const size_t c_value_size = *buflen > 0 ? (size_t)*buflen : 0;"]),
    # C writes up to pset_len bytes (0 asks for the length only), MPICH's buffer is the Fortran length.
    ("MPI_Session_get_nth_pset", "pset_name"): (
        "({len} > c_pset_len ? {len} : c_pset_len) + 1", "{len}", None,
        ["const size_t c_pset_len = *pset_len > 0 ? (size_t)*pset_len : 0;"]),
}

# MPICH turns these logical outputs into 0/1 from a local C flag, set whatever the result.
F08_LOCAL_FLAG = {"MPI_Info_get", "MPI_Info_get_string", "MPI_Info_get_valuelen"}

# The weight arrays may be mpi_f08's MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY (capture_f08_weights).
F08_WEIGHT_PARAMS = {"sourceweights", "destweights", "weights"}
# MPICH hands these procedures' addresses to PMPI_* unchanged, which the wrapper does as well.
F08_PASSED_PROCEDURES = {"MPI_Op_create", "MPI_Comm_create_errhandler", "MPI_File_create_errhandler",
                         "MPI_Session_create_errhandler", "MPI_Win_create_errhandler"}
KEYVAL_REASON = ("MPICH registers its Fortran attribute proxies after PMPI_*_create_keyval through a "
                 "libmpichfort-internal function; no communicator involved")
F08_NOT_WRAPPED = {
    "MPI_Comm_create_keyval": KEYVAL_REASON,
    "MPI_Type_create_keyval": KEYVAL_REASON,
    "MPI_Win_create_keyval": KEYVAL_REASON,
    "MPI_Info_create_env": ("MPICH 4.0.2's entry point hands its (info, ierror) to PMPI_Info_create_env as "
                            "argc and argv: no behaviour of its to replicate; no communicator involved"),
    "MPI_Register_datarep": ("callbacks: MPICH replaces the Fortran MPI_CONVERSION_FN_NULL procedure by NULL; "
                             "no communicator involved"),
}


def f08_unsupported_reason(function):
    if function.name in ("MPI_Init", "MPI_Init_thread", "MPI_Pcontrol"):
        return None  # special-cased in f08_wrapper
    if function.name in F08_NOT_WRAPPED:
        return F08_NOT_WRAPPED[function.name]
    for p in function.params:
        if p.name == "array_of_errcodes":
            return f"parameter {p.name} may be the special Fortran address MPI_ERRCODES_IGNORE"
        if p.base_type == "void" and p.name in ("baseptr", "buffer_addr"):
            continue  # type(c_ptr) passed by reference: the pointer-to-pointer C expects
        if p.base_type == "char" and p.text.count("*") == 1 and "[" not in p.text:
            if not p.text.startswith("const") and (function.name, p.name) not in F08_STRING_OUT:
                return f"output string {p.name} of unknown buffer size"
            continue
        if p.base_type.endswith("_function") and function.name in F08_PASSED_PROCEDURES:
            continue
        if p.base_type not in SCALAR_TYPES and p.base_type not in ("MPI_Status", "MPI_File"):
            return f"parameter {p.text} needs a Fortran conversion"
    return None


def f08_wrapper(function, symbol):
    """An mpi_f08 entry point: Fortran passes everything by reference and ierror last (optional, so
    maybe NULL), then the hidden lengths of its strings. Calls the C wrapper, so the call is counted
    once and MPI_COMM_WORLD translated."""
    f = function
    params, args, before, after, late, lengths, strings = [], [], [], [], [], [], []
    if f.name == "MPI_Init":
        params, args = [], ["NULL", "NULL"]
    elif f.name == "MPI_Init_thread":
        params, args = ["int *required", "int *provided"], ["NULL", "NULL", "*required", "provided"]
    elif f.name == "MPI_Pcontrol":
        params, args = ["int *level"], ["*level"]
    else:
        for p in f.params:
            if p.base_type == "MPI_File":
                params.append(f"MPI_Fint *{p.name}")
                if not p.pointer:
                    args.append(f"PMPI_File_f2c(*{p.name})")
                else:
                    initial = "MPI_FILE_NULL" if f.name == "MPI_File_open" else f"PMPI_File_f2c(*{p.name})"
                    before.append(f"    MPI_File c_{p.name} = {initial};")
                    args.append(f"&c_{p.name}")
                    after.append(f"    *{p.name} = PMPI_File_c2f(c_{p.name});")
            elif p.base_type == "MPI_Status":
                const = "const " if p.text.startswith("const") else ""
                params.append(f"{const}MPI_Status *{p.name}")
                ignore = ("capture_f08_statuses_ignore()" if p.name == "array_of_statuses"
                          else "capture_f08_status_ignore()")
                c_ignore = "MPI_STATUSES_IGNORE" if p.name == "array_of_statuses" else "MPI_STATUS_IGNORE"
                args.append(f"(void *){p.name} == {ignore} ? {c_ignore} : ({const}MPI_Status *){p.name}")
            elif p.base_type == "char":
                output = not p.text.startswith("const")
                params.append(f"{'' if output else 'const '}char *{p.name}")
                lengths.append(f"size_t {p.name}_len")
                strings.append((p.name, output))
                args.append(f"c_{p.name}")
            elif p.name in F08_WEIGHT_PARAMS:
                params.append(pointer_param(p))
                args.append(f"capture_f08_weights({p.name})")
            elif p.name == "flag" and f.name in F08_LOCAL_FLAG:
                params.append("int *flag")
                before.append("    int c_flag = 0;")
                args.append("&c_flag")
                after.append("    *flag = c_flag != 0;")
            elif p.name == "buflen" and f.name == "MPI_Info_get_string":
                # C counts the NUL, Fortran does not; 0 asks for the length only.
                params.append("int *buflen")
                before.append("    int c_buflen = *buflen > 0 ? *buflen + 1 : 0;")
                args.append("&c_buflen")
                late.append("    if (c_flag)")
                late.append("        *buflen = c_buflen - 1;")
            elif p.pointer:
                params.append(pointer_param(p))
                args.append(p.name)
            else:
                params.append(f"{p.base_type} *{p.name}")
                args.append(f"*{p.name}")
    returns_int = f.ret == "int"
    if returns_int:
        params.append("MPI_Fint *ierror")
    params += lengths
    decl = f"{f.ret if not returns_int else 'void'} {symbol}({', '.join(params) or 'void'})"
    out = [f"CAPTURE_EXPORT {decl};", decl, "{"]
    call = f"{f.name}({', '.join(args)})"
    if not strings:
        out += before
        if returns_int:
            out += [f"    const int capture_result = {call};"]
            out += after + late
            out += ["    if (ierror)", "        *ierror = capture_result;"]
        else:
            out += [f"    return {call};"]
        out += ["}", ""]
        return out
    if not returns_int:
        raise SystemExit(f"gen_wrappers.py: {f.name}: strings in a function that returns {f.ret}")
    copies, frees = [], []
    for name, output in strings:
        stack = f"{name}_stack"
        if output:
            size, fill, condition, lines = F08_STRING_OUT[(f.name, name)]
            before += [f"    {line}" for line in lines]
            size, fill = size.format(len=f"{name}_len"), fill.format(len=f"{name}_len")
            make = f"capture_f08_string_buffer({size}, {stack}, sizeof {stack})"
            copy = f"capture_f08_string_out(c_{name}, {name}, {fill});"
            copies += [f"        if ({condition})", f"            {copy}"] if condition else [f"        {copy}"]
        else:
            make = f"capture_f08_string_in({name}, {name}_len, {stack}, sizeof {stack})"
        before += [f"    char {stack}[CAPTURE_F08_STRING_STACK];", f"    char *const c_{name} = {make};"]
        frees.append(f"    capture_f08_string_free(c_{name}, {stack});")
    out += before
    out += ["    int capture_result = MPI_ERR_NO_MEM;",
            f"    if ({' && '.join(f'c_{name}' for name, _ in strings)}) {{",
            f"        capture_result = {call};"]
    out += ["    " + line for line in after]
    out += copies
    out += ["    " + line for line in late]
    out += ["    }"] + frees
    out += ["    if (ierror)", "        *ierror = capture_result;", "}", ""]
    return out


def pointer_param(p):
    """A C array parameter as a plain pointer (int ranges[][3] stays as it is: its layout is Fortran's)."""
    if "[" in p.text and "][" not in p.text:
        return re.sub(r"(\w+)\s*\[[^\]]*\]\s*$", r"*\1", p.text)
    return p.text


# ---- output --------------------------------------------------------------------------------------

HEADER_NOTE = "/* Generated by capture/gen/gen_wrappers.py from capture/mpi_functions.tsv; do not edit. */\n"


def write_ids(functions, path):
    with open(path, "w") as out:
        out.write(HEADER_NOTE)
        out.write("#ifndef OTFX_CAPTURE_FUNCTIONS_H\n#define OTFX_CAPTURE_FUNCTIONS_H\n\n")
        out.write("/* One id per MPI function of the table, in table order: the function_id of records. */\n")
        out.write("enum capture_function_id {\n")
        for index, f in enumerate(functions):
            out.write(f"    {fid(f)} = {index},\n")
        out.write(f"    CAPTURE_FUNCTION_COUNT = {len(functions)}\n}};\n\n")
        out.write("/* Names indexed by enum capture_function_id. */\n")
        out.write("extern const char *const capture_function_names[CAPTURE_FUNCTION_COUNT];\n")
        out.write("/* Event classes (the table's class column: \"p2p-send\", \"collective\", ...) indexed by\n"
                  " * enum capture_function_id: the event place derives region roles from them. */\n")
        out.write("extern const char *const capture_function_classes[CAPTURE_FUNCTION_COUNT];\n\n#endif\n")


def write_function_table(functions, path):
    """The names and classes alone: a place, or a test acting as one, links them without the wrappers."""
    with open(path, "w") as out:
        out.write(HEADER_NOTE)
        out.write('#include "capture_functions.h"\n\n')
        out.write("const char *const capture_function_names[CAPTURE_FUNCTION_COUNT] = {\n")
        for f in functions:
            out.write(f'    "{f.name}",\n')
        out.write("};\n\n")
        out.write("const char *const capture_function_classes[CAPTURE_FUNCTION_COUNT] = {\n")
        for f in functions:
            out.write(f'    "{f.cls}",\n')
        out.write("};\n")


def write_wrappers(functions, path):
    with open(path, "w") as out:
        out.write(HEADER_NOTE)
        out.write('#include "capture_functions.h"\n#include "channels.h"\n#include "communicators.h"\n#include "control.h"\n'
                  '#include "nesting.h"\n#include "recorder.h"\n#include "requests.h"\n#include "steered.h"\n#include "world.h"\n\n')
        out.write("#include <mpi.h>\n#include <stdbool.h>\n#include <stdint.h>\n\n")
        for f in functions:
            if f.manual:
                out.write(f"/* {f.name}: hand-written in capture/src/manual_wrappers.c or world_split.c */\n\n")
                continue
            if steered(f):
                out.write("\n".join(steered_helper(f)) + "\n")
            out.write("\n".join(c_wrapper(f)) + "\n")


def write_f08(functions, path):
    skipped, wrapped = [], 0
    with open(path, "w") as out:
        out.write(HEADER_NOTE)
        out.write("/* mpi_f08 entry points that MPICH's libmpichfort implements by calling PMPI_* directly:\n"
                  " * without these the calls would bypass the C wrappers (untraced, MPI_COMM_WORLD not\n"
                  " * translated). Each forwards to the C wrapper. */\n")
        out.write('#include "fortran.h"\n\n#include <mpi.h>\n#include <stddef.h>\n\n')
        for f in functions:
            for symbol in f.f08:
                reason = f08_unsupported_reason(f)
                if reason:
                    skipped.append(f"{symbol} ({reason})")
                    continue
                out.write("\n".join(f08_wrapper(f, symbol)) + "\n")
                wrapped += 1
        for entry in F08_SEVERAL_CALLS:
            symbol, _, calls = entry.partition(":")
            skipped.append(f"{symbol} (calls {calls.replace('+', ' and ')})")
        out.write(f"/* {wrapped} entry points wrapped above. Not wrapped ({len(skipped)}; they still call PMPI_*\n"
                  " * directly, untraced):\n")
        for entry in skipped:
            out.write(f" *   {entry}\n")
        out.write(" */\n")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gen_wrappers.py TABLE OUT_DIR")
    functions = read_table(sys.argv[1])
    FUNCTIONS_BY_NAME.update({f.name: f for f in functions})
    write_ids(functions, f"{sys.argv[2]}/capture_functions.h")
    write_function_table(functions, f"{sys.argv[2]}/capture_function_table.c")
    write_wrappers(functions, f"{sys.argv[2]}/capture_wrappers.c")
    write_f08(functions, f"{sys.argv[2]}/capture_wrappers_f08.c")


if __name__ == "__main__":
    main()
