"""The ``flashpath`` command line."""

from __future__ import annotations

import os
import re
import stat
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

import click

from flashpath import _core, calibrate, outputs
from flashpath._core import FlashpathError
from flashpath._jobtext import files_read, job_value_problem
from flashpath._messages import named, printable, shown
from flashpath.engine import BACKENDS

T = TypeVar("T")

# Seeds are 64-bit, as the core's.
SEED = click.IntRange(min=0, max=2**64 - 1)


def _with_progress(call: Callable[[], T]) -> T:
    """Run `call` (the core releases the GIL); after a second, show on
    stderr that the simulation is running, but only on a terminal and never
    on stdout."""
    if not sys.stderr.isatty():
        return call()
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # re-raised in the caller's thread
            error.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    t0 = time.perf_counter()
    worker.start()
    worker.join(1.0)
    spinner = "|/-\\"
    i = 0
    while worker.is_alive():
        elapsed = time.perf_counter() - t0
        sys.stderr.write(f"\rflashpath: simulating {spinner[i % 4]} {elapsed:5.1f} s")
        sys.stderr.flush()
        i += 1
        worker.join(0.2)
    if i:
        sys.stderr.write("\r" + " " * 40 + "\r")
    if error:
        raise error[0]
    return result[0]


def _run_job_text(
    job: str,
    name: str,
    device: str,
    overrides: tuple[str, ...],
    seed: int,
    output_format: str,
    written_by: dict[int, str] | None = None,
    bandwidth_log: tuple[bool, bool] | None = None,
) -> _core.JobRun:
    """Run a job written here (replay), named `name` in messages, with the
    run's notes on stderr; a bad input ends the command. `written_by` maps
    a line of the job to the command-line option that wrote it, so that a
    message names the option rather than the job line."""
    try:
        run = _with_progress(
            lambda: _core.run_job_text(
                job, name, os.getcwd(), device, list(overrides), seed, output_format, bandwidth_log
            )
        )
    except FlashpathError as err:
        _, file, line, what = err.args
        if written_by and file == name and line in written_by:
            _error(f"{written_by[line]}: {what}")
        _fail(err)
    for note in run.notes:
        click.echo(note, err=True)
    return run


def fio_output_format(argv: Sequence[str]) -> str:
    """The output formats fio 3.33 takes from its command line, in order
    (init.c parse_cmd_line): `--minimal` sets terse alone, `--append-terse`
    adds terse, `--output-format` sets its list; the last word wins."""
    formats: list[str] = ["normal"]
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--minimal":
            formats = ["terse"]
        elif arg == "--append-terse":
            if "terse" not in formats:
                formats.append("terse")
        elif arg == "--output-format" and i + 1 < len(argv):
            formats = argv[i + 1].split(",")
            i += 1
        elif arg.startswith("--output-format="):
            formats = arg.partition("=")[2].split(",")
        i += 1
    return ",".join(formats)


def agg_bw_sampled(eta: str, output_format: str, output: str | None) -> tuple[bool, bool]:
    """When fio 3.33 samples its --bandwidth-log logs (eta.c
    calc_thread_status): periodically only as it prints its status line
    (not when the normal output is left out and the report goes to stdout,
    nor with --eta=never, nor when stdout is not a terminal unless
    --eta=always); and once more, forced, when the JSON report asks each
    job's status (stat.c show_thread_status_json)."""
    formats = output_format.split(",")
    periodic = (
        ("normal" in formats or output is not None)
        and eta != "never"
        and (eta == "always" or sys.stdout.isatty())
    )
    return periodic, "json" in formats or "json+" in formats


def only_sections(text: str, sections: Sequence[str], name: str) -> str:
    """The job file with only the job sections `sections` and every global
    section, as fio --section parses it (init.c parse_jobs_ini skips the
    lines of any other section): the others' lines become comments, so
    that a message's line number is the file's. A file with `include`
    lines is refused (their sections would need the same choice)."""
    out = []
    keep = True
    found: set[str] = set()
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("include "):
            _error(f"{named(name)}: --section with include files is not modelled by flashpath")
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1].strip()
            keep = section == "global" or section in sections
            if keep and section != "global":
                found.add(section)
        out.append(line if keep else "#")
    if not found:
        # fio: "No job(s) defined", its usage text, exit status 1.
        _error(f"{named(name)}: no job defined: no section named {', '.join(sections)}")
    return "\n".join(out) + "\n"


def _check_read_only(
    job: str, device: str, overrides: tuple[str, ...], text: str | None = None
) -> None:
    """fio --readonly: a job that writes or trims is refused as its rw= is
    read (options.c rw_verify: "fio: job <NAME> has write or trim bit set,
    but fio is in read-only mode"), and fio runs nothing."""
    try:
        writers = _core.job_writers(job, device, list(overrides), text, os.getcwd())
    except FlashpathError as err:
        _fail(err)
    if writers:
        name, line = writers[0]
        _error(
            f"{named(job)}:{line}: job '{name}': fio: job <{name}> has write or trim bit set, "
            "but fio is in read-only mode (--readonly)"
        )


def _check_terse_version(version: str) -> None:
    """fio takes terse versions 2 to 5 (init.c, 'bad terse version format'
    otherwise); flashpath writes version 3, fio's default."""
    try:
        v = int(version)
    except ValueError:
        v = 0
    if not 2 <= v <= 5:
        _error(f"--terse-version={printable(version)}: bad terse version format (fio takes 2 to 5)")
    if v != 3:
        _error(
            f"--terse-version={v}: terse version {v} is not modelled by flashpath "
            "(it writes version 3, fio's default)"
        )


def command_line_job(args: Sequence[str]) -> tuple[str, dict[int, str]]:
    """fio's jobs on its command line (init.c parse_cmd_line): `--key=value`
    or `--key` options; those before the first `--name` go to the global
    section, each `--name=X` starts job X (whose options then list `name`,
    as fio's JSON shows). Returns the job text and, for messages, which
    argument wrote each of its lines."""
    lines = ["[global]"]
    written_by: dict[int, str] = {}
    for arg in args:
        if not arg.startswith("--") or len(arg) == 2:
            _error(
                f"{printable(arg)}: not a job option (--key=value); flashpath runs one "
                f"job file or the jobs given on the command line"
            )
        key, sep, value = arg[2:].partition("=")
        if key == "name":
            if not value:
                _error(f"{printable(arg)}: --name needs a job name")
            lines.append(f"[{value}]")
            written_by[len(lines)] = arg
        lines.append(f"{key}={value}" if sep else key)
        written_by[len(lines)] = arg
    if not any(a.startswith("--name=") for a in args):
        # fio: "No job(s) defined" when no --name starts a job.
        _error(f"{printable(' '.join(args))}: no job defined (start one with --name=...)")
    return "\n".join(lines) + "\n", written_by


def _error(message: str) -> NoReturn:
    click.echo(f"flashpath: error: {printable(message)}", err=True)
    sys.exit(2)


def _write(path: str, text: str, what: str, append: bool = False) -> None:
    """Write `text` to `path` (asked for by `what`) by the output rule
    (flashpath.outputs: whole, never over a device node), or add it to the
    end of `path` (`append`, as fio does with a shared per_job_logs=0 log
    and write_iolog); a failure ends the command with one message naming
    both and the OS error."""
    try:
        if append:
            outputs.append_text(path, text, what)
        else:
            outputs.write_text(path, text, what)
    except outputs.OutputError as err:
        _fail(err)


def _check_writable(
    path: str,
    what: str,
    inputs: Sequence[outputs.Named] = (),
    others: Sequence[outputs.Named] = (),
) -> None:
    """Before a long run: end the command if `path` cannot be an output
    (an input of the run, another output, a folder, a device node, a FIFO;
    its folder is missing or read-only; it is read-only)."""
    try:
        outputs.check_output(path, what, inputs, others)
    except outputs.OutputError as err:
        _fail(err)


def _device_input(device: str) -> list[outputs.Named]:
    """The profile file a --device names, when it names a file."""
    return [outputs.Named(device, "the device profile")] if Path(device).is_file() else []


def _job_inputs(job: str) -> list[outputs.Named]:
    """A job file and the files its lines name for reading (include,
    read_iolog), relative to its folder as fio reads them."""
    found = [outputs.Named(job, "the job file")]
    try:
        with open(job, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError:
        return found
    folder = Path(job).parent
    for name, line in files_read(text):
        found.append(outputs.Named(str(folder / name), f"read by {job} ({line})"))
    return found


def _fail(err: FlashpathError) -> NoReturn:
    # The core raises (message, file, line, what is wrong); the message
    # alone is what the user reads.
    _error(err.args[0] if err.args and isinstance(err.args[0], str) else str(err))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_core.__version__, prog_name="flashpath")
def main() -> None:
    """flashpath: simulate the whole Linux flash-storage I/O path."""


@main.command("run", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("job", type=click.Path(dir_okay=False), required=False)
@click.option(
    "--device",
    help="Profile name (see `flashpath profiles`) or .toml path (required).",
)
@click.option(
    "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a profile parameter."
)
@click.option("--seed", default=0, show_default=True, type=SEED, help="Run seed.")
@click.option(
    "--output-format",
    default="normal",
    show_default=True,
    help="normal, json, json+, terse, or a comma list, as fio takes it.",
)
@click.option("--output", type=click.Path(), help="Write the report here.")
@click.option(
    "--parse-only", is_flag=True, help="Check the job file and exit, as fio --parse-only."
)
@click.option(
    "--section",
    "sections",
    multiple=True,
    metavar="NAME",
    help="Run only this job section of JOB (and its global sections), as fio --section; "
    "may be given more than once.",
)
@click.option(
    "--readonly",
    is_flag=True,
    help="Refuse jobs that write or trim, as fio --readonly (its safety check).",
)
@click.option("--minimal", is_flag=True, help="Terse output only, as fio --minimal.")
@click.option(
    "--append-terse",
    is_flag=True,
    help="Add the terse output to the chosen format, as fio --append-terse.",
)
@click.option(
    "--terse-version",
    default="3",
    show_default=True,
    help="The terse format's version, as fio takes it (flashpath writes version 3).",
)
@click.option(
    "--bandwidth-log",
    "-b",
    "bandwidth_log",
    is_flag=True,
    help="Write agg-read_bw.log, agg-write_bw.log and agg-trim_bw.log in the current "
    "folder, as fio --bandwidth-log.",
)
@click.option(
    "--eta",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="fio's --eta: flashpath prints no status line, but --bandwidth-log's samples are "
    "taken only when fio would print one.",
)
@click.pass_context
def run_cmd(
    ctx: click.Context,
    job: str | None,
    device: str | None,
    overrides: tuple[str, ...],
    seed: int,
    output_format: str,
    output: str | None,
    parse_only: bool,
    sections: tuple[str, ...],
    readonly: bool,
    minimal: bool,
    append_terse: bool,
    terse_version: str,
    bandwidth_log: bool,
    eta: str,
) -> None:
    """Run fio job file JOB (`-`: standard input) on a simulated machine, or
    jobs given on the command line as fio takes them (`--name=a
    --rw=randread ...`: options before the first --name are global, each
    --name starts a job)."""
    _check_terse_version(terse_version)
    if "global" in sections:
        # init.c parse_cmd_line, case 'x'.
        _error("--section=global: fio can't use global as only section")
    if minimal or append_terse:
        output_format = fio_output_format(sys.argv[1:])
    agg = agg_bw_sampled(eta, output_format, output) if bandwidth_log else None
    args = list(ctx.args)
    if job is not None and job.startswith("--"):
        # An unknown option came first: click took it for JOB.
        args.insert(0, job)
        job = None
    # JOB may be left out for jobs on the command line, and --device is
    # checked here so that click's own words come in its order.
    if job is None and not args:
        raise click.UsageError("Missing argument 'JOB'.", ctx)
    if device is None:
        raise click.UsageError("Missing option '--device'.", ctx)
    if sections and (args or job == "-" or parse_only):
        _error("--section picks job sections of a job file that is run")
    if args:
        if job is not None:
            _error(
                f"{named(job)}: give a job file or jobs on the command line (--name=...), not both"
            )
        text, written_by = command_line_job(args)
        if output and not parse_only:
            _check_writable(output, "--output")
        if readonly:
            _check_read_only("<command line>", device, overrides, text)
        if parse_only:
            # fio --parse-only takes jobs on the command line as a file.
            _parse_only_text(text, "<command line>", device, overrides)
            return
        run = _run_job_text(
            text, "<command line>", device, overrides, seed, output_format, written_by, agg
        )
        _write_outputs(run, output, _device_input(device))
        return
    if job == "-":
        # fio reads a job file named '-' from standard input (init.c
        # parse_jobs_ini: `if (!strcmp(file, "-")) f = stdin`).
        if output and not parse_only:
            _check_writable(output, "--output")
        text = sys.stdin.read()
        if readonly:
            _check_read_only("<stdin>", device, overrides, text)
        if parse_only:
            _parse_only_text(text, "<stdin>", device, overrides)
            return
        run = _run_job_text(text, "<stdin>", device, overrides, seed, output_format, None, agg)
        _write_outputs(run, output, _device_input(device))
        return
    problem = _input_file_problem(job, "job file")
    if problem:
        _error(f"{named(job)}: {problem}")
    inputs = _job_inputs(job) + _device_input(device)
    if output:
        _check_writable(output, "--output", inputs)
    if sections:
        text = only_sections(Path(job).read_text(errors="surrogateescape"), sections, job)
        if readonly:
            _check_read_only(job, device, overrides, text)
        run = _run_job_text(text, job, device, overrides, seed, output_format, None, agg)
        _write_outputs(run, output, inputs)
        return
    if readonly:
        _check_read_only(job, device, overrides)
    try:
        if parse_only:
            for note in _core.parse_only(job, device, list(overrides)):
                click.echo(note, err=True)
            return
        run = _with_progress(
            lambda: _core.run_job(job, device, list(overrides), seed, output_format, agg)
        )
    except FlashpathError as err:
        _fail(err)
    for note in run.notes:
        click.echo(note, err=True)
    # Logs the job asked for (write_lat_log, write_iolog), where fio writes
    # them: relative to the current directory.
    _write_outputs(run, output, inputs)


def _parse_only_text(text: str, name: str, device: str, overrides: tuple[str, ...]) -> None:
    """`--parse-only` on job text: every check a run makes, the parser's
    notes on stderr, nothing run and nothing written."""
    try:
        notes = _core.parse_only(name, device, list(overrides), text=text, base_dir=os.getcwd())
    except FlashpathError as err:
        _fail(err)
    for note in notes:
        click.echo(note, err=True)


def _write_outputs(run: _core.JobRun, output: str | None, inputs: list[outputs.Named]) -> None:
    """The run's logs and report (or the report on stdout), each checked
    against the run's inputs and the other outputs before any is written."""
    written = [outputs.Named(output, "--output")] if output else []
    for log in run.logs:
        _check_writable(log.name, log.option, inputs, written)
        written.append(outputs.Named(log.name, log.option))
    for log in run.logs:
        _write(log.name, log.contents, log.option, log.append)
    if output:
        _write(output, run.text, "--output")
    else:
        click.echo(run.text, nl=False)
    if run.failed_jobs:
        # fio's exit status: one for each job that ended on an error
        # (backend.c reap_threads), capped where an exit status ends.
        sys.exit(min(run.failed_jobs, 255))


@main.command("profiles")
def profiles_cmd() -> None:
    """List the shipped profiles."""
    for name in _core.profiles():
        click.echo(f"{name:24} {_core.profile_description(name)}")


@main.group("profile")
def profile_group() -> None:
    """Inspect a profile."""


@profile_group.command("show")
@click.argument("name")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE")
def profile_show(name: str, overrides: tuple[str, ...]) -> None:
    """Every parameter of profile NAME with its unit and source."""
    try:
        click.echo(_core.profile_show(name, list(overrides)), nl=False)
    except FlashpathError as err:
        _fail(err)


@main.command("reproduce")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@click.option("--plot", "plot_path", type=click.Path(), help="Draw the result to this file.")
@click.option(
    "--report",
    "report_path",
    type=click.Path(),
    help="Write the validation page (Markdown) here, its plots in the folder of the "
    "same name (docs/validation.md -> docs/validation/); with all, also the FTL's "
    "write amplification against the analytic curve.",
)
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: one per CPU).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show the progress bar (default: only on a terminal).",
)
def reproduce_cmd(
    name: str,
    fmt: str,
    plot_path: str | None,
    report_path: str | None,
    seed: int,
    jobs: int | None,
    progress: bool | None,
) -> None:
    """Run a published experiment's grid (NAME, or all) and compare."""
    from flashpath import reproduce as rp

    what = "--plot"
    if plot_path:
        # Before the grid runs.
        _check_image(plot_path, what)
    if report_path:
        others = [outputs.Named(plot_path, "--plot")] if plot_path else []
        _check_writable(report_path, "--report", (), others)
        folder = os.path.splitext(report_path)[0]
        if os.path.exists(folder) and not os.path.isdir(folder):
            _error(f"--report: {named(folder)}, the folder of its plots, is not a folder")
    workers = jobs or os.cpu_count() or 1
    ran = rp.Ran()
    try:
        rows = rp.reproduce(name, seed, jobs=workers, show_progress=progress, ran=ran)
    except FlashpathError as err:
        _fail(err)
    render = {"table": rp.to_table, "csv": rp.to_csv, "json": rp.to_json}[fmt]
    click.echo(render(rows), nl=False)
    click.echo(
        f"flashpath reproduce {name}: {ran.runs} runs in {ran.wall_s:.1f} s on "
        f"{workers} worker{'s' if workers != 1 else ''}",
        err=True,
    )
    if plot_path:
        plotter = rp.PLOTTERS.get(name, rp.plot)
        try:
            with outputs.replacing(plot_path, what, image=True) as tmp:
                plotter(rows, tmp)
        except outputs.OutputError as err:
            _fail(err)
        except OSError as exc:
            _error(f"{what}: cannot write {shown(plot_path)}: {exc.strerror or exc}")
        click.echo(f"plot written to {_image_written(plot_path)}", err=True)
    if report_path:
        from flashpath import validation

        # `all` adds the FTL's write-amplification curve (issue 16.5), which
        # belongs to no one scenario.
        wa = validation.ftl_wa_rows() if name == "all" else None
        try:
            validation.write_report(rows, report_path, wa)
        except outputs.OutputError as err:
            _fail(err)
        except OSError as exc:
            _error(f"--report: cannot write {shown(report_path)}: {exc.strerror or exc}")
        click.echo(f"validation page written to {report_path}", err=True)


@main.command("sweep")
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    type=click.Path(),
    help="The Parquet table (default: SPEC's name .parquet, here); its parts and run "
    "log go beside it.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: one per CPU); with --backend ray, the CPUs of a "
    "local Ray instance.",
)
@click.option("--backend", type=click.Choice(BACKENDS), default="local", show_default=True)
@click.option("--address", default=None, help="A Ray cluster to run on (--backend ray).")
@click.option("--extend", is_flag=True, help="Reuse an output that another spec began.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show the progress bar (default: only on a terminal).",
)
@click.option("--check", "check_only", is_flag=True, help="Check the spec with the core and exit.")
def sweep_cmd(
    spec_path: str,
    out: str | None,
    jobs: int | None,
    backend: str,
    address: str | None,
    extend: bool,
    progress: bool | None,
    check_only: bool,
) -> None:
    """Run every point of a sweep spec (a base job, a device, axes) and
    write one table: a row per point, job and direction."""
    from flashpath.sweep_run import SweepError, run_sweep, summary
    from flashpath.sweep_spec import SpecError, check, load_spec

    if address and backend != "ray":
        _error("--address: a cluster address is for --backend ray")
    problem = _input_file_problem(spec_path, "sweep spec")
    if problem:
        _error(f"{named(spec_path)}: {problem}")
    try:
        spec = load_spec(spec_path)
        if check_only:
            check(spec)
            click.echo(f"{spec_path}: {len(spec.points)} points, all accepted", err=True)
            return
    except SpecError as err:
        _error(str(err))
    out = out or f"{Path(spec_path).stem}.parquet"
    try:
        outcome = run_sweep(
            spec,
            out,
            jobs=jobs,
            backend=backend,
            address=address,
            extend=extend,
            show_progress=progress,
        )
    except (SpecError, SweepError, outputs.OutputError) as err:
        _error(str(err))
    except KeyboardInterrupt:
        click.echo(
            f"flashpath: interrupted; finished points are kept in {out}.parts "
            "(run the same command again to go on)",
            err=True,
        )
        sys.exit(130)
    except (ConnectionError, RuntimeError) as err:
        _error(f"--backend {backend}: {err}")
    for note in outcome.notes:
        click.echo(f"flashpath: {printable(note)}", err=True)
    click.echo(summary(spec, outcome, backend, outcome.jobs, out), err=True)


def _image_written(path: str) -> str:
    """The file an image went to, as said to the user: a name without an
    extension holds a PNG under that very name (not NAME.png, as
    matplotlib's own savefig would make it)."""
    return path if Path(path).suffix else f"{path} (PNG: the name has no extension)"


def _check_image(path: str, what: str, inputs: Sequence[outputs.Named] = ()) -> None:
    """Before the work: matplotlib must know the format by the name's
    extension (none: PNG), and the file must be writable."""
    from flashpath import reproduce as rp

    kind = Path(path).suffix.removeprefix(".").lower()
    formats = rp.plot_formats()
    if kind and kind not in formats:
        _error(
            f"{what}: matplotlib cannot write '.{shown(kind)[1:-1]}' images "
            f"(it writes {', '.join(sorted(formats))})"
        )
    _check_writable(path, what, inputs)


@main.command("plot")
@click.argument("source", metavar="TABLE", type=click.Path(dir_okay=False))
@click.option(
    "--kind",
    type=click.Choice(["line", "cdf", "breakdown"]),
    default="line",
    show_default=True,
    help="line: Y against X; cdf: the latency CDF of Y (clat_ns, lat_ns); breakdown: "
    "per-layer time per I/O for each X.",
)
@click.option("--x", "x", help="The x-axis column (an axis such as fio.iodepth).")
@click.option("--y", "y", help="The metric (iops, clat_ns.p99, fp.driver.ftl.map_hit_ratio...).")
@click.option("--hue", help="One line per value of this column.")
@click.option("--where", multiple=True, metavar="KEY=VALUE", help="Only rows with KEY = VALUE.")
@click.option("-o", "--output", "out", required=True, type=click.Path(), help="PNG or SVG.")
def plot_cmd(
    source: str,
    kind: str,
    x: str | None,
    y: str | None,
    hue: str | None,
    where: tuple[str, ...],
    out: str,
) -> None:
    """Plot a sweep's table (TABLE.parquet) or one run's fio JSON output
    (TABLE.json, from flashpath run --output-format json)."""
    from flashpath.plot import PlotError, plot

    problem = _input_file_problem(source, "table")
    if problem:
        _error(f"{named(source)}: {problem}")
    _check_image(out, "--output", [outputs.Named(source, "the table")])
    try:
        plot(source, out, kind=kind, x=x, y=y, hue=hue, where=where)
    except (PlotError, outputs.OutputError) as err:
        _error(str(err))
    except OSError as exc:
        _error(f"--output: cannot write {shown(out)}: {exc.strerror or exc}")
    click.echo(f"plot written to {_image_written(out)}", err=True)


@main.command(
    "iozone", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option("--device", required=True, help="Profile name or path.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE")
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def iozone_cmd(
    device: str, overrides: tuple[str, ...], seed: int, as_json: bool, args: tuple[str, ...]
) -> None:
    """Run an iozone command line: flashpath iozone --device P -- <iozone args>."""
    try:
        run = _core.run_iozone(list(args), device, list(overrides), seed)
    except FlashpathError as err:
        _fail(err)
    click.echo(run.json_text if as_json else run.text)


@main.command("dd", context_settings={"ignore_unknown_options": True})
@click.argument("operands", nargs=-1)
@click.option("--device", required=True, help="Profile name or .toml path.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE")
@click.option("--seed", default=0, show_default=True, type=SEED)
def dd_cmd(operands: tuple[str, ...], device: str, overrides: tuple[str, ...], seed: int) -> None:
    """dd if=DEV of=/dev/null bs=N iflag=direct count=N on a simulated
    machine, printing dd's own summary."""
    try:
        run = _with_progress(lambda: _core.run_dd(list(operands), device, list(overrides), seed))
    except FlashpathError as err:
        _fail(err)
    click.echo(run.text, err=True, nl=False)


# The lines of the replay job that command-line options write.
_REPLAY_ENGINE_LINE, _REPLAY_IODEPTH_LINE = 2, 4


def replay_job(
    trace: str,
    no_stall: bool,
    iodepth: int,
    engine: str,
    extra: tuple[str, ...] = (),
) -> str:
    """The fio job that replays TRACE (read_iolog=TRACE) as fio would; fio
    reads its own iologs and blktrace files there, flashpath every trace
    format it knows. `extra` are more job lines (replay_* options)."""
    lines = [
        "[replay]",
        f"ioengine={engine}",
        "direct=1",
        f"iodepth={iodepth}",
        f"read_iolog={Path(trace).resolve()}",
    ]
    if no_stall:
        lines.append("replay_no_stall=1")
    lines.extend(extra)
    return "\n".join(lines) + "\n"


# The queue depth an open-loop or as-fast-as-possible replay keeps at most
# when --iodepth is not given: enough that the trace's own arrivals, not
# the job's depth, decide what is in flight.
_OPEN_LOOP_DEPTH = 1024


def _is_iolog(trace: str) -> bool:
    try:
        with open(trace, "rb") as f:
            return f.read(12) == b"fio version "
    except OSError:
        return False


def _blktrace_stem_files(trace: str) -> list[Path]:
    """blktrace's per-CPU files of the stem TRACE (`sdb` for
    sdb.blktrace.0, .1, ...), as `blkparse -i sdb` reads them."""
    p = Path(trace)
    prefix = p.name + ".blktrace."
    parent = p.parent
    if not p.name or not parent.is_dir():
        return []
    return sorted(
        q for q in parent.iterdir() if q.name.startswith(prefix) and q.name[len(prefix) :].isdigit()
    )


def _special_kind(mode: int) -> str | None:
    """What a file that is no regular file is, by its stat mode."""
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((what for test, what in kinds if test(mode)), None)


def _input_file_problem(path: str, what: str) -> str | None:
    """Why `path` cannot be read as `what` (a job file, a sweep spec, a
    table), or None for a regular file. Checked with stat, never by
    opening: a FIFO without a writer would block, and these inputs are
    read twice (once for the files they name, once to run)."""
    try:
        st = Path(path).stat()
    except FileNotFoundError:
        return f"no such {what}"
    except OSError as exc:
        return f"cannot read the {what}: {exc.strerror or exc}"
    kind = _special_kind(st.st_mode)
    if kind:
        return f"is {kind}, not a {what}: it must be a regular file; copy it to one first"
    return None


def _trace_path_problem(trace: str) -> str | None:
    """What is wrong with TRACE as a trace path, or None. Checked with
    stat, never by opening: a FIFO without a writer would block."""
    p = Path(trace)
    try:
        st = p.stat()
    except FileNotFoundError:
        if _blktrace_stem_files(trace):
            return None
        return "no such trace file"
    except OSError as exc:
        return f"cannot read the trace: {exc.strerror or exc}"
    what = _special_kind(st.st_mode)
    if what:
        return (
            f"is {what}, not a trace file: a trace is read twice (once to check it, once "
            "as it replays), so it must be a regular file; copy it to one first"
        )
    try:
        # A regular file: opening it cannot block.
        with open(p, "rb"):
            pass
    except OSError as exc:
        return f"cannot read the trace: {exc.strerror or exc}"
    return None


@main.command("replay")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option("--device", required=True, help="Profile name or .toml path.")
@click.option(
    "--format",
    "trace_format",
    default="auto",
    show_default=True,
    help="Trace format: auto (detect), blktrace, blkparse, msr, mqsim, disksim, blkreplay, "
    "spc, alibaba, tencent, csv (with --columns), iolog (fio's write_iolog).",
)
@click.option(
    "--columns",
    default=None,
    help="Column mapping for --format csv, e.g. "
    "'time=0:us,op=1:R/W,offset=2:bytes,len=3:bytes' (see docs/traces.md).",
)
@click.option(
    "--blkparse-format",
    default=None,
    help="The -f format blkparse printed the trace with, e.g. '%D %a %d %S %n %T.%t\\n' "
    "(it needs %a, %d, %S, %T and %n or %N; implies --format blkparse).",
)
@click.option(
    "--mode",
    type=click.Choice(["as-recorded", "closed", "fast"]),
    default=None,
    help="as-recorded: each I/O at its recorded time (open loop, --time-scale); closed: "
    "no timing, --iodepth I/Os in flight; fast: no timing, as deep as the device takes. "
    "[default: as-recorded]",
)
@click.option(
    "--timing",
    type=click.Choice(["as-recorded", "fast"]),
    default=None,
    hidden=True,
    help="Older name of --mode.",
)
@click.option(
    "--iodepth",
    default=None,
    type=click.IntRange(min=1),
    help="I/Os in flight at most [default: closed: the trace's recorded queue depth (its "
    "most I/Os in flight, from its completions); fio iologs: 1; else 1024].",
)
@click.option(
    "--time-scale",
    default=100,
    show_default=True,
    type=click.IntRange(min=1),
    help="fio's replay_time_scale: recorded times scaled by 100 / this percentage.",
)
@click.option(
    "--replay-scale",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="fio's replay_scale: offsets divided by this.",
)
@click.option(
    "--replay-align",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="fio's replay_align: offsets rounded down to this power of two.",
)
@click.option(
    "--trace-device",
    default=None,
    help="Replay only this device: MAJOR,MINOR (blktrace) or the device/volume number.",
)
@click.option(
    "--remap",
    default="error",
    show_default=True,
    help="An address past the simulated device: error, wrap (modulo its size), scale "
    "(all offsets scaled onto it), offset:BYTES (all shifted).",
)
@click.option(
    "--replay-delay",
    type=click.Choice(["reap", "sleep"]),
    default="reap",
    show_default=True,
    help="While waiting for the next I/O's time: reap completions as they come (fio 3.36 "
    "and later, clat is the I/O's own) or sleep without reaping (fio 3.33: clat includes "
    "the wait).",
)
@click.option(
    "--per-cpu",
    type=click.Choice(["merge", "named"]),
    default="merge",
    show_default=True,
    help="A blktrace per-CPU file NAME.blktrace.N: merge every NAME.blktrace.M beside it "
    "(as blkparse -i NAME) or replay the named file alone (as fio's read_iolog).",
)
@click.option("--ioengine", "engine", default="libaio", show_default=True)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE")
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--output-format", default="normal", show_default=True)
@click.option("--output", type=click.Path(), help="Write the report here.")
@click.option(
    "--lat-csv",
    type=click.Path(),
    help="Write one row per replayed I/O: its recorded and simulated latency.",
)
def replay_cmd(
    trace: str,
    device: str,
    trace_format: str,
    columns: str | None,
    blkparse_format: str | None,
    mode: str | None,
    timing: str | None,
    iodepth: int | None,
    time_scale: int,
    replay_scale: int,
    replay_align: int,
    trace_device: str | None,
    remap: str,
    replay_delay: str,
    per_cpu: str,
    engine: str,
    overrides: tuple[str, ...],
    seed: int,
    output_format: str,
    output: str | None,
    lat_csv: str | None,
) -> None:
    """Replay TRACE (a block trace or fio iolog) on a simulated machine,
    with fio's report; a trace with recorded completions gets its recorded
    latencies beside the simulated ones."""

    if blkparse_format is not None:
        if columns is not None:
            _error("--blkparse-format and --columns: give one")
        if trace_format not in ("auto", "blkparse"):
            _error(f"--blkparse-format is blkparse's, not --format {shown(trace_format)}'s")
        trace_format, columns = "blkparse", blkparse_format
    if mode and timing and mode != timing:
        _error(f"--mode {mode} and --timing {timing}: give one")
    mode = mode or timing or "as-recorded"
    problem = _trace_path_problem(trace)
    if problem:
        _error(f"{named(trace)}: {problem}")
    problem = job_value_problem(str(Path(trace).resolve()))
    if problem:
        _error(f"{named(trace)}: flashpath cannot name this trace in fio's read_iolog: {problem}")
    if not re.fullmatch(r"[A-Za-z0-9_.:/+-]+", engine):
        _error(f"--ioengine {shown(engine)}: not an ioengine name")
    if replay_align & (replay_align - 1):
        _error(f"--replay-align {replay_align}: not a power of two")
    inputs = [outputs.Named(trace, "the trace"), *_device_input(device)]
    if output:
        _check_writable(output, "--output", inputs)
    if lat_csv:
        others = [outputs.Named(output, "--output")] if output else []
        _check_writable(lat_csv, "--lat-csv", inputs, others)
    iolog = trace_format == "iolog" or (trace_format == "auto" and _is_iolog(trace))
    if lat_csv and iolog:
        _error("--lat-csv: a fio iolog records no completions; use write_lat_log in a job")
    # closed without --iodepth: the core sets the recorded depth.
    recorded_depth = iodepth is None and mode == "closed" and not iolog
    if iodepth is None:
        iodepth = 1 if (iolog or mode == "closed") else _OPEN_LOOP_DEPTH
    extra = [f"replay_time_scale={time_scale}"] if time_scale != 100 else []
    if replay_scale != 1:
        extra.append(f"replay_scale={replay_scale}")
    if replay_align:
        extra.append(f"replay_align={replay_align}")
    job = replay_job(trace, mode != "as-recorded", iodepth, engine, tuple(extra))
    written_by = {
        _REPLAY_ENGINE_LINE: f"--ioengine {engine}",
        _REPLAY_IODEPTH_LINE: f"--iodepth {iodepth}",
    }
    name = f"replay {trace}"
    try:
        run = _with_progress(
            lambda: _core.run_trace_text(
                job,
                name,
                os.getcwd(),
                device,
                list(overrides),
                seed,
                output_format,
                trace_format=None if trace_format == "auto" else trace_format,
                columns=columns,
                trace_device=trace_device,
                remap=remap,
                absolute=mode == "as-recorded" and not iolog,
                lat_csv=lat_csv,
                recorded_depth=recorded_depth,
                replay_delay=replay_delay,
                per_cpu=per_cpu,
            )
        )
    except FlashpathError as err:
        _, file, line, what = err.args
        if file == name and line in written_by:
            _error(f"{written_by[line]}: {what}")
        _fail(err)
    for note in run.notes:
        click.echo(note, err=True)
    _write_outputs(run, output, inputs)


_UFS_BENCH_JOB = (
    "[bench]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=32\n"
    "filename=/dev/sda\nnorandommap\nnumber_ios={n}\n"
)

# (profile, job text, profile overrides). The UFS rows run the whole model
# (host path, UFS link and driver, FTL with map cache, NAND) over the whole
# 64 GB device; the HPB row adds ufshpb in device control mode, so every
# miss of the host map costs a READ BUFFER of a sub-region.
BENCH_WORKLOADS = {
    "nullblk randread 4k qd32, 1 job": (
        "nullblk",
        "[bench]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=32\n"
        "filename=/dev/nullb0\nnorandommap\nnumber_ios={n}\n",
        [],
    ),
    "ufs21-64g randread 4k qd32 (whole model)": ("ufs21-64g", _UFS_BENCH_JOB, []),
    "ufs21-64g randread 4k qd32, HPB on": (
        "ufs21-64g",
        _UFS_BENCH_JOB,
        ["ufs.hpb.enabled=1"],
    ),
    # The NVMe flash SSD: front end (slots, DMA, data cache) over the FTL
    # and NAND of MQSim's default device, random reads over all 476 GiB.
    "mqsim-default randread 4k qd32 (NVMe flash)": (
        "mqsim-default",
        "[bench]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=32\n"
        "filename=/dev/nvme0n1\nnorandommap\nnumber_ios={n}\n",
        [],
    ),
    # Buffered: page cache over 1 GiB of memory on a 4 GiB range, so reads
    # miss and reclaim, and writes are throttled and written back.
    "nullblk randrw 4k psync, page cache": (
        "nullblk",
        "[bench]\nioengine=psync\nrw=randrw\nbs=4k\nsize=4g\n"
        "filename=/dev/nullb0\nnorandommap\nnumber_ios={n}\n",
        ["host.memory=1"],
    ),
    # swiotlb=512,4,force: four threads map 4 KiB requests (4 bounce
    # mappings each) from their own CPUs, pools grow, areas are searched.
    "virtio-ramdisk randrw 4k qd256 x4, swiotlb": (
        "virtio-ramdisk",
        "[bench]\nioengine=libaio\ndirect=1\nrw=randrw\nbs=4k\niodepth=256\nnumjobs=4\n"
        "filename=/dev/vda\nnorandommap\nnumber_ios={quarter}\n",
        [],
    ),
    "nullblk randread 4k qd1 psync": (
        "nullblk",
        "[bench]\nioengine=psync\ndirect=1\nrw=randread\nbs=4k\n"
        "filename=/dev/nullb0\nnorandommap\nnumber_ios={n}\n",
        [],
    ),
}


@main.command("bench")
@click.option(
    "--ios",
    default=2_000_000,
    show_default=True,
    type=click.IntRange(min=1, max=2**63 - 1),
    help="Simulated I/Os per workload.",
)
@click.option(
    "--only",
    default=None,
    help="Run only the workloads whose name contains this text.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Profile override for the ufs21-64g workloads (repeatable).",
)
def bench_cmd(ios: int, only: str | None, overrides: tuple[str, ...]) -> None:
    """Simulated I/Os and events per wall second on fixed workloads."""
    chosen = {n: w for n, w in BENCH_WORKLOADS.items() if only is None or only in n}
    # A filter that matches nothing, or overrides no chosen workload
    # takes, would end with nothing measured or nothing changed: refused.
    if not chosen:
        _error(
            f"--only {shown(only or '')}: no workload's name contains it; workloads: "
            + ", ".join(BENCH_WORKLOADS)
        )
    if overrides and not any(device == "ufs21-64g" for device, _, _ in chosen.values()):
        _error("--set: applies to the ufs21-64g workloads, and --only chose none of them")
    click.echo(f"flashpath {_core.__version__}, core built as {_core.build_profile()}")
    for name, (device, text, sets) in chosen.items():
        job = text.format(n=ios, quarter=max(ios // 4, 1))
        extra = list(overrides) if device == "ufs21-64g" else []
        t0 = time.perf_counter()
        try:
            run = _core.run_job_text(
                job, f"<bench {name}>", os.getcwd(), device, sets + extra, 0, "terse"
            )
        except FlashpathError as err:
            _fail(err)
        wall = time.perf_counter() - t0
        done, events = run.completed_ios, run.events
        click.echo(
            f"{name:40} {done:>10} I/Os {wall:7.2f} s  "
            f"{done / wall / 1e6:6.2f} M I/O/s  {events / wall / 1e6:6.2f} M events/s"
        )


@main.group("calibrate")
def calibrate_group() -> None:
    """Fit a device profile to your own fio runs (docs/calibrate.md)."""


@calibrate_group.command("plan")
@click.option("--out", "out", required=True, help="Folder for the job files and README.")
@click.option(
    "--file",
    "filename",
    required=True,
    help="The scratch file (2 GiB) the jobs read and WRITE: never a device or data you need.",
)
@click.option("--checks", is_flag=True, help="Also write jobs outside the plan, to check a fit.")
@click.option("--force", is_flag=True, help="Overwrite the plan's files in an existing folder.")
def calibrate_plan(out: str, filename: str, checks: bool, force: bool) -> None:
    """Write the fio jobs that identify a device, with a README."""
    try:
        written = calibrate.write_plan(Path(out), filename, checks, force)
    except (calibrate.CalibrateError, outputs.OutputError) as err:
        _error(str(err))
    except OSError as exc:
        _error(f"--out: cannot write {shown(out)}: {exc.strerror or exc}")
    for path in written:
        click.echo(str(path))


def _runs(paths: tuple[str, ...]) -> list[calibrate.Measured]:
    try:
        return calibrate.load_runs(list(paths))
    except calibrate.CalibrateError as err:
        _error(str(err))


@calibrate_group.command("fit")
@click.option("--host", required=True, help="Host profile (name or .toml path) to keep.")
@click.option("--out", "out", required=True, help="The profile to write (.toml).")
@click.option(
    "--jobs",
    default=os.cpu_count() or 1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Candidate fits run at once.",
)
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
def calibrate_fit(host: str, out: str, jobs: int, runs: tuple[str, ...]) -> None:
    """Fit the generic device to fio JSON outputs RUNS over --host."""
    try:
        import scipy  # noqa: F401
    except ImportError:
        _error("calibrate fit needs scipy: pip install 'flashpath[calibrate]'")
    measured = _runs(runs)
    inputs = [outputs.Named(r, "a run file") for r in runs] + _device_input(host)
    _check_writable(out, "--out", inputs)
    try:
        result = _with_progress(lambda: calibrate.fit(measured, host, Path(out), jobs=jobs))
    except calibrate.CalibrateError as err:
        _error(str(err))
    except FlashpathError as err:
        _fail(err)
    _write(out, result.profile, "--out")
    c = result.cand
    click.echo(
        f"{out}: {c.servers} servers ({c.dispatch}), read {c.read_fixed_ns / 1e3:.1f} us, "
        f"write {c.write_fixed_ns / 1e3:.1f} us, transfer {c.transfer_rate / 1e6:.0f} MB/s, "
        f"service cv {c.service_cv:.2f}, tail {c.service_tail:.2f}, "
        f"IOPS cap {c.iops_cap:.0f}, bandwidth cap {c.bandwidth_cap / 1e6:.0f} MB/s, "
        f"turnaround {c.turnaround_ns / 1e3:.1f} us, "
        f"switch delay {c.switch_delay_ns / 1e3:.1f} us, "
        f"write-back {c.writeback_bytes / 1024:.0f} KiB / {c.writeback_flush_ns / 1e3:.0f} us"
    )
    # Every fitted parameter, identified (by which runs) or not.
    for key, source in result.sources.items():
        if key in result.not_identified or source.startswith("not identified"):
            click.echo(f"not identified by these runs: {key} ({source})")
        else:
            click.echo(f"identified: {key} ({source})")
    for _file, job, figure, err in result.errors + result.tail_errors:
        click.echo(f"  {job:<28} {figure:<16} {100 * err:+6.1f}%")


@calibrate_group.command("check")
@click.argument("profile")
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--plot", "plot_path", default=None, help="Also draw simulated vs measured (.png).")
def calibrate_check(profile: str, runs: tuple[str, ...], plot_path: str | None) -> None:
    """Simulated vs measured, per job and figure, for fio JSON outputs RUNS."""
    measured = _runs(runs)
    if plot_path is not None:
        inputs = [outputs.Named(r, "a run file") for r in runs] + _device_input(profile)
        _check_image(plot_path, "--plot", inputs)
    try:
        rows = _with_progress(lambda: calibrate.check(profile, measured))
    except calibrate.CalibrateError as err:
        _error(str(err))
    click.echo(calibrate.table(rows), nl=False)
    click.echo(calibrate.pins_text(measured), nl=False)
    if plot_path is not None:
        try:
            calibrate.plot(rows, plot_path)
        except outputs.OutputError as err:
            _fail(err)
        click.echo(f"plot written to {_image_written(plot_path)}", err=True)


if __name__ == "__main__":
    main()
