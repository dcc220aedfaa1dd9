#!/usr/bin/python3
"""gen_settings.py — generate the settings library's table and the settings document from
capture/settings/settings.tsv, the one table of every OTFX_* environment setting.

    gen_settings.py --code TABLE OUT_DIR      writes OUT_DIR/otfx/settings_table.h (the setting ids,
                                              the value indexes of enum and list settings, numeric
                                              defaults) and OUT_DIR/settings_table.c (the descriptors)
    gen_settings.py --doc TABLE DOC           writes the settings document (docs/settings.md)
    gen_settings.py --check-doc TABLE DOC     exits 1 when DOC differs from what --doc would write

The build runs --code; the test docs.settings_table runs --check-doc, so the committed document
always says what the code does.
"""
import re
import sys
from dataclasses import dataclass

COLUMNS = ["name", "type", "values", "default", "range", "readers", "kind", "option", "problem",
           "too_small", "help"]
TYPES = ["bool", "integer", "size", "duration", "real", "string", "enum", "list", "rate"]
READERS = ["rank", "place", "launcher", "client"]
KINDS = ["user", "internal", "test"]
SIZE_SHIFTS = {"": 0, "K": 10, "M": 20, "G": 30}
INT64_MAX = (1 << 63) - 1


@dataclass
class Setting:
    name: str
    type: str
    values: list
    default: str
    range: str
    readers: list
    kind: str
    option: str
    problem: str
    too_small: str
    help: str

    @property
    def ident(self):
        return self.name[len("OTFX_"):]


def fail(line, message):
    raise SystemExit(f"gen_settings.py: settings.tsv line {line}: {message}")


def parse_size(text):
    match = re.fullmatch(r"(\d+)([KMG]?)", text)
    return int(match.group(1)) << SIZE_SHIFTS[match.group(2)] if match else None


def parse_bound(setting, text, line):
    if text == "":
        return None
    if setting.type == "size":
        value = parse_size(text)
    elif setting.type == "integer":
        value = int(text) if re.fullmatch(r"-?\d+", text) else None
    else:
        try:
            value = float(text)
        except ValueError:
            value = None
    if value is None:
        fail(line, f"{setting.name}: bad range bound '{text}'")
    return value


def parse_range(setting, line):
    """(min, min_open, max, max_open), None for an unbounded end."""
    if not setting.range:
        return None, False, None, False
    match = re.fullmatch(r"([\[(])([^,]*),([^\])]*)([\])])", setting.range)
    if not match or setting.type not in ("integer", "size", "duration", "real"):
        fail(line, f"{setting.name}: bad range '{setting.range}' for a {setting.type}")
    low = parse_bound(setting, match.group(2), line)
    high = parse_bound(setting, match.group(3), line)
    return low, match.group(1) == "(", high, match.group(4) == ")"


def read_table(path):
    settings = []
    header = None
    with open(path, encoding="utf-8") as table:
        for number, raw in enumerate(table, 1):
            text = raw.rstrip("\n")
            if not text or text.startswith("#"):
                continue
            fields = text.split("\t")
            if header is None:
                if fields != COLUMNS:
                    fail(number, f"header must be {' '.join(COLUMNS)}")
                header = fields
                continue
            if len(fields) != len(COLUMNS):
                fail(number, f"{len(fields)} columns, {len(COLUMNS)} expected")
            row = dict(zip(COLUMNS, fields))
            setting = Setting(name=row["name"], type=row["type"],
                              values=row["values"].split(",") if row["values"] else [],
                              default=row["default"], range=row["range"],
                              readers=row["readers"].split(","), kind=row["kind"], option=row["option"],
                              problem=row["problem"], too_small=row["too_small"], help=row["help"])
            if not re.fullmatch(r"OTFX_[A-Z0-9_]+", setting.name):
                fail(number, f"bad name '{setting.name}'")
            if setting.type not in TYPES:
                fail(number, f"{setting.name}: type must be one of {', '.join(TYPES)}")
            if (setting.type in ("enum", "list")) != bool(setting.values):
                fail(number, f"{setting.name}: values go with enum and list settings, and only with them")
            if setting.type == "list" and len(setting.values) > 32:
                fail(number, f"{setting.name}: a list holds at most 32 values")
            if any(r not in READERS for r in setting.readers):
                fail(number, f"{setting.name}: readers must be among {', '.join(READERS)}")
            if setting.kind not in KINDS:
                fail(number, f"{setting.name}: kind must be one of {', '.join(KINDS)}")
            if setting.kind == "test" and not setting.name.startswith("OTFX_TEST_"):
                fail(number, f"{setting.name}: test points are named OTFX_TEST_*")
            if setting.type not in ("string",) and not setting.problem:
                fail(number, f"{setting.name}: a {setting.type} setting needs its problem message")
            if not setting.help:
                fail(number, f"{setting.name}: no help text")
            if setting.type == "enum" and setting.default and setting.default not in setting.values:
                fail(number, f"{setting.name}: default '{setting.default}' is not among its values")
            if setting.type == "bool" and setting.default not in ("0", "1"):
                fail(number, f"{setting.name}: a bool's default is 0 or 1")
            if setting.type == "size" and setting.default and parse_size(setting.default) is None:
                fail(number, f"{setting.name}: default '{setting.default}' is not a size")
            setting.bounds = parse_range(setting, number)
            settings.append(setting)
    names = [s.name for s in settings]
    if len(set(names)) != len(names):
        raise SystemExit("gen_settings.py: a setting is listed twice")
    return settings


def c_string(text):
    if text is None:
        return "NULL"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_bound(setting, value):
    if value is None:
        return "0"
    if setting.type in ("integer", "size"):
        return f"{value}LL" if value != -INT64_MAX - 1 else "(-9223372036854775807LL - 1)"
    return repr(float(value))


def write_code(settings, out_dir):
    header = [
        "/* Generated by capture/gen/gen_settings.py from capture/settings/settings.tsv: do not edit. */",
        "#ifndef OTFX_SETTINGS_TABLE_H",
        "#define OTFX_SETTINGS_TABLE_H",
        "",
        "/* One id per row of settings.tsv: OTFX_BUFFER is OTFX_SETTING_BUFFER. */",
        "typedef enum otfx_setting {",
    ]
    header += [f"    OTFX_SETTING_{s.ident}," for s in settings]
    header += ["    OTFX_SETTING_COUNT", "} otfx_setting;", ""]
    header.append("/* enum settings: the index otfx_setting_choice returns; list settings: the bit "
                  "(1u << index) of otfx_setting_list. */")
    for s in settings:
        for index, value in enumerate(s.values):
            ident = re.sub(r"[^A-Z0-9]", "_", value.upper())
            header.append(f"#define OTFX_SETTING_{s.ident}_{ident} {index}")
    header.append("")
    header.append("/* The defaults of numeric settings, for the code that must agree with them. */")
    for s in settings:
        if s.default and s.type in ("integer", "size"):
            value = parse_size(s.default) if s.type == "size" else int(s.default)
            header.append(f"#define OTFX_SETTING_{s.ident}_DEFAULT {value}LL")
        elif s.default and s.type in ("duration", "real"):
            header.append(f"#define OTFX_SETTING_{s.ident}_DEFAULT {float(s.default)!r}")
    header.append("")
    header.append("/* The bounds of integer and size settings that have them (both ends included). */")
    for s in settings:
        low, low_open, high, high_open = s.bounds
        if s.type in ("integer", "size") and low is not None:
            header.append(f"#define OTFX_SETTING_{s.ident}_MIN {low + 1 if low_open else low}LL")
        if s.type in ("integer", "size") and high is not None:
            header.append(f"#define OTFX_SETTING_{s.ident}_MAX {high - 1 if high_open else high}LL")
    header += ["", "#endif", ""]

    source = [
        "/* Generated by capture/gen/gen_settings.py from capture/settings/settings.tsv: do not edit. */",
        '#include "settings_internal.h"',
        "",
    ]
    for s in settings:
        if s.values:
            values = ", ".join(c_string(v) for v in s.values)
            source.append(f"static const char *const values_{s.ident}[] = {{{values}}};")
    source += ["", "const otfx_setting_info otfx_setting_table[OTFX_SETTING_COUNT] = {"]
    for s in settings:
        low, low_open, high, high_open = s.bounds
        readers = " | ".join(f"OTFX_READER_{r.upper()}" for r in s.readers)
        source.append(f"    [OTFX_SETTING_{s.ident}] = {{")
        source.append(f"        .name = {c_string(s.name)},")
        source.append(f"        .type = OTFX_SETTING_TYPE_{s.type.upper()},")
        if s.values:
            source.append(f"        .values = values_{s.ident},")
            source.append(f"        .value_count = {len(s.values)},")
        source.append(f"        .default_text = {c_string(s.default) if s.default else 'NULL'},")
        field = "" if s.type in ("integer", "size") else "_real"
        if low is not None:
            source.append(f"        .has_min = true, .min_open = {'true' if low_open else 'false'},")
            source.append(f"        .min{field} = {c_bound(s, low)},")
        if high is not None:
            source.append(f"        .has_max = true, .max_open = {'true' if high_open else 'false'},")
            source.append(f"        .max{field} = {c_bound(s, high)},")
        source.append(f"        .readers = {readers},")
        source.append(f"        .kind = OTFX_SETTING_KIND_{s.kind.upper()},")
        source.append(f"        .option = {c_string(s.option) if s.option else 'NULL'},")
        source.append(f"        .problem = {c_string(s.problem) if s.problem else 'NULL'},")
        source.append(f"        .too_small = {c_string(s.too_small) if s.too_small else 'NULL'},")
        source.append(f"        .help = {c_string(s.help)},")
        source.append("    },")
    source += ["};", ""]

    import os
    os.makedirs(os.path.join(out_dir, "otfx"), exist_ok=True)
    write_if_changed(os.path.join(out_dir, "otfx", "settings_table.h"), "\n".join(header))
    write_if_changed(os.path.join(out_dir, "settings_table.c"), "\n".join(source))


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as old:
            if old.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as new:
        new.write(text)


def md(text):
    return text.replace("|", "\\|")


def doc_type(s):
    if s.type in ("enum", "list"):
        joined = ", ".join(f"`{v}`" for v in s.values)
        return f"{s.type}: {joined}"
    if s.range:
        return f"{s.type} {s.range}"
    return s.type


def doc_default(s):
    if s.default:
        return f"`{s.default}`"
    return "unset"


def doc_invalid(s):
    if not s.problem:
        return ""
    message = f"`{md(s.problem.replace('{}', '…'))}`"
    if s.too_small:
        message += f"; below the range: `{md(s.too_small.replace('{}', '…'))}`"
    return message


def render_doc(settings):
    lines = [
        "<!-- Generated by capture/gen/gen_settings.py from capture/settings/settings.tsv: do not edit.",
        "     Regenerate: /usr/bin/python3 capture/gen/gen_settings.py --doc capture/settings/settings.tsv"
        " docs/settings.md -->",
        "# otfx settings (environment variables)",
        "",
        "Every `OTFX_*` environment variable otfx reads, from the one table `capture/settings/settings.tsv`.",
        "The settings library (`otfx/settings.h`) reads them all once, at `MPI_Init` in the ranks and places",
        "and at start in `otfx-run`, and checks them. An empty value counts as unset. `otfx-run` sets most of",
        "them from its options (column *option*; `otfx-run --help` lists the same table); without `otfx-run`",
        "(`mpiexec` with `OTFX_PLACES`, or MPMD) set them yourself: every rank and place reads the same",
        "environment (docs/usage.md, \"Tracing a job\").",
        "",
        "*Read by*: `rank` the application ranks, `place` the tool places (the root among them), `launcher`",
        "`otfx-run` and its guard, `client` `otfxctl` and `otfx-gui`. An invalid value read by the ranks or",
        "the places stops the job in `MPI_Init` (exit 2) with the message shown (prefixed",
        "`otfx-capture:` or `otfx-place N:`); `otfx-run` checks its options before any rank starts.",
        "",
        "| variable | type | default | read by | option | meaning | invalid value |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in settings:
        if s.kind != "user":
            continue
        option = f"`{s.option}`" if s.option else ""
        lines.append(f"| `{s.name}` | {doc_type(s)} | {doc_default(s)} | {', '.join(s.readers)} | {option} | "
                     f"{md(s.help)} | {doc_invalid(s)} |")
    lines += [
        "",
        "## Set by otfx-run for its own processes",
        "",
        "| variable | type | read by | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for s in settings:
        if s.kind == "internal":
            lines.append(f"| `{s.name}` | {doc_type(s)} | {', '.join(s.readers)} | {md(s.help)} |")
    lines += [
        "",
        "## Test points",
        "",
        "Settings only tests set, never real runs. The code reads them through `otfx/testpoint.h` only",
        "(`otfx_testpoint_*`), so that `grep otfx_testpoint` finds every place where a test bends",
        "behaviour. An invalid value is reported on stderr once and ignored.",
        "",
        "| variable | type | default | read by | meaning | invalid value |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in settings:
        if s.kind == "test":
            lines.append(f"| `{s.name}` | {doc_type(s)} | {doc_default(s)} | {', '.join(s.readers)} | "
                         f"{md(s.help)} | {doc_invalid(s)} |")
    lines.append("")
    return "\n".join(lines)


def main(argv):
    if len(argv) != 4 or argv[1] not in ("--code", "--doc", "--check-doc"):
        raise SystemExit(__doc__)
    settings = read_table(argv[2])
    if argv[1] == "--code":
        write_code(settings, argv[3])
        return 0
    text = render_doc(settings)
    if argv[1] == "--doc":
        with open(argv[3], "w", encoding="utf-8") as doc:
            doc.write(text)
        return 0
    try:
        with open(argv[3], encoding="utf-8") as doc:
            committed = doc.read()
    except FileNotFoundError:
        committed = None
    if committed == text:
        return 0
    print(f"{argv[3]} differs from what {argv[2]} generates; regenerate it with\n"
          f"  /usr/bin/python3 capture/gen/gen_settings.py --doc capture/settings/settings.tsv docs/settings.md",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
