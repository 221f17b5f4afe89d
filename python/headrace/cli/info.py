"""Says what headrace can use on this machine: its version, the read backends (and why one cannot run),
GPUs, CUDA and driver, cuFile mode, liburing, nvCOMP, NCCL, and the streaming engine's defaults and memory
limits.

    headrace info [FILE.hrc] [--device N|cpu] [engine options]

With a FILE: how each frame would reach the device now, and why: its read route (page-locked pages, the
page cache, the disk by O_DIRECT, the disk buffered and kept, cuFile in GDS or compatibility mode), its
transfer (copied, DMA'd from the file's pages, decoded on the GPU or the CPU), consecutive frames routed
alike as one run, and the rate the last `headrace probe` of the file's file system measured for each read
route. The engine routes every chunk as a stream of the same options would, without reading it (a file
the page cache holds whole is page-locked meanwhile, as a stream's engine would page-lock it)."""

from __future__ import annotations

import argparse
import os
import tempfile

from rich.table import Table

import headrace
from headrace import _ext, engine, routes
from headrace.cli._engine_options import add_option_arguments, given_options
from headrace.cli._output import console, human_bytes, print_json
from headrace.cli._shared import Device, Path, choose_device
from headrace.errors import UsageError
from headrace.reading import BACKENDS


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("info", help=summary,
                                   description=__doc__)
    parser.add_argument("file", type=Path(), nargs="?", default=None,
                        help="a container: how each of its frames would be read now, and why")
    parser.add_argument("--device", type=Device(), default=None,
                        help="with FILE, where its frames would go: cpu is host memory (default: GPU 0 when there is "
                             "one, else host memory, said once)")
    parser.add_argument("--path", type=Path(), default=".", metavar="FOLDER",
                        help="folder whose file system the backends are checked on, with a small file written "
                             "there and removed (default: .)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_option_arguments(parser)
    parser.set_defaults(func=run)


def collect(directory: str) -> dict:
    """Everything ``info`` reports, as a dict (also used by the benchmarks' records)."""
    try:
        probe = tempfile.NamedTemporaryFile(dir=directory, prefix=".headrace-info-")
    except OSError as error:  # e.g. /proc, a read-only mount
        raise OSError(f"cannot write a test file in {directory}: {error.strerror}") from None
    with probe:
        probe.write(b"\0" * 8192)
        probe.flush()
        backends = {kind: _ext.backend_unavailable_reason(kind, probe.name) for kind in BACKENDS}
    environment = _ext.gpu_environment()
    return {
        "version": headrace.__version__,
        "checked_on": os.path.abspath(directory),
        "backends": {kind: {"available": why is None, "why": why or ""} for kind, why in backends.items()},
        "liburing": backends["uring"] is None,
        "gpus": environment["gpus"],
        "cuda_driver": environment["cuda_driver"],
        "nvidia_driver": environment["nvml"],
        "cuda_runtime": environment["cuda_runtime"],
        "cufile": environment["cufile"],
        "cufile_mode": environment["cufile_mode"],
        "cufile_mode_reason": environment["cufile_mode_reason"],
        "nvcomp": environment["nvcomp"],
        "nvcomp_cpu": environment["nvcomp_cpu"],
        "nccl": environment["nccl"],
        "settings": _ext.Settings.current().to_dict(),
        "engine": engine_limits(),
    }


def engine_limits() -> dict:
    """What an engine takes with no options given (defaults, then HEADRACE_<NAME>) and what bounds its
    memory, with the engines this process holds now."""
    options = _ext.QueueOptions.from_environment()
    queue = options.to_dict()
    del queue["io"], queue["device"]  # the I/O knobs are reported as "settings"; the device is each stream's
    budget, source = (queue["pin_budget_bytes"], "given") if queue["pin_budget_bytes"] else _ext.default_pin_budget()
    return {
        "queue": queue,
        "pin_budget_bytes": budget,
        "pin_budget_source": source,
        "staging_bytes": queue["staging_bytes"] + options.page_cache_staging_bytes(),  # both lanes' rings
        "spare_slot_bytes": engine.SPARE_SLOT_BYTES,
        "max_shared_engines": engine.MAX_SHARED_ENGINES,
        "held": [held.describe() for held in engine.shared_engines()],
    }


def _library_line(status: dict) -> str:
    if status["available"]:
        return f"[green]yes[/] {status['version']} ({status['path']})".replace(" ()", "")
    return f"[red]no[/] ({status['why']})"


def _print_routes(found: routes.Routes) -> None:
    where = "host memory" if found.device == "cpu" else f"GPU {found.device}"
    system = found.file_system
    console.print(f"{found.file} into {where}: {found.why or 'no choice to say'}", soft_wrap=True)
    console.print(f"file system: {system['type'] or '?'} on {system['source'] or system['key']}, mounted at "
                  f"{system['mount'] or '?'}", soft_wrap=True)
    table = Table(title="frames by route")
    for column in ("field", "frames", "chunks", "stored", "read from", "then"):
        table.add_column(column, justify="right" if column in ("chunks", "stored") else "left")
    for run in found.runs:
        frames = str(run.first_frame) if run.first_frame == run.last_frame else f"{run.first_frame}-{run.last_frame}"
        for group in run.groups:
            table.add_row(run.field, frames, f"{group.chunks:,}", human_bytes(group.stored_bytes), group.read, group.transfer)
    console.print(table)
    used_reads = dict.fromkeys(group.read for run in found.runs for group in run.groups)
    used_transfers = dict.fromkeys(group.transfer for run in found.runs for group in run.groups)
    for key in used_reads:
        rate = found.rates.get(key)
        console.print(f"  {key}: {found.details.get(key, '')}{f'; measured here: {rate}' if rate else ''}", soft_wrap=True)
    for key in used_transfers:
        console.print(f"  {key}: {found.details.get(key, '')}", soft_wrap=True)
    console.print(f"engine: {found.configuration}", soft_wrap=True)


def run(args: argparse.Namespace) -> int:
    if args.file is not None:
        device = choose_device(args.device)
        found = routes.explain(args.file, device, options=None, **given_options(args))
        if args.json:
            print_json(found.as_dict())
        else:
            _print_routes(found)
        return 0
    asked = sorted(given_options(args)) + (["device"] if args.device is not None else [])
    if asked:
        raise UsageError(f"{', '.join(asked)}: these say how a FILE's frames would be read; give the FILE "
                         "(headrace info FILE.hrc ...)")
    if not os.path.isdir(args.path):
        what = "is not a folder" if os.path.exists(args.path) else "does not exist"
        raise UsageError(f"--path {args.path} {what}: expected a folder, where the backends are tried on a file")
    report = collect(args.path)
    if args.json:
        print_json(report)
        return 0
    console.print(f"headrace {report['version']}")
    table = Table(title=f"host I/O backends (on {report['checked_on']})")
    table.add_column("backend")
    table.add_column("available")
    for kind, status in report["backends"].items():
        table.add_row(kind, "[green]yes[/]" if status["available"] else f"[red]no[/]: {status['why']}")
    console.print(table)
    if report["gpus"]:
        for gpu in report["gpus"]:
            console.print(f"GPU {gpu['ordinal']}: {gpu['name']}, {human_bytes(gpu['memory_bytes'])}, "
                          f"compute {gpu['compute_capability']}, PCI {gpu['pci_bus_id']}")
    else:
        console.print("GPUs: [yellow]none[/]: GPU paths fall back to host memory and CPU codecs")
    console.print(f"CUDA driver (libcuda): {_library_line(report['cuda_driver'])}")
    console.print(f"NVIDIA driver (NVML): {_library_line(report['nvidia_driver'])}")
    console.print(f"CUDA runtime: {_library_line(report['cuda_runtime'])}")
    console.print(f"cuFile: {_library_line(report['cufile'])}; mode {report['cufile_mode']} ({report['cufile_mode_reason']})")
    console.print(f"nvCOMP: {_library_line(report['nvcomp'])}; CPU codecs: {_library_line(report['nvcomp_cpu'])}")
    console.print(f"NCCL (compositing on several GPUs): {_library_line(report['nccl'])}")
    console.print(f"liburing: {'[green]yes[/]' if report['liburing'] else '[red]no[/]: ' + report['backends']['uring']['why']}")
    limits = report["engine"]
    queue = limits["queue"]
    console.print(f"engine: read path {queue['backend']} (cache policy {queue['cache_policy']}), pin files "
                  f"{queue['pin_files']}; holds at most {human_bytes(limits['staging_bytes'])} of staging (both lanes), "
                  f"{human_bytes(limits['pin_budget_bytes'])} of page-locked files ({limits['pin_budget_source']}), {human_bytes(limits['spare_slot_bytes'])} "
                  f"of spare slots and {queue['status_history']} statuses; {limits['max_shared_engines']} engines a process"
                  f"{'; held now: ' + '; '.join(limits['held']) if limits['held'] else ''}")
    settings = ", ".join(f"{k}={v}" for k, v in report["settings"].items())
    console.print(f"settings: {settings}")
    return 0
