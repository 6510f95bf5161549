"""`python -m bench`: deploy the app and the seed designs, run every scenario, write results and charts."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench import (
    channels,
    contact,
    dispatch,
    docs_pages,
    emulator_speed,
    functions,
    hotswap,
    oncall,
    report,
    scenarios,
    storm,
)
from bench.deploy import deploy_bench
from bench.measure import Run
from emulator.session import Deployment, deployed

BENCH_DIR = Path(__file__).resolve().parent
RUN_SECTIONS = {"alert": scenarios.alert_runs, "poller": scenarios.poller_runs, "map-retry": scenarios.map_runs}


@dataclass(frozen=True)
class Section:
    """A section measured on the deployed app after the machines' runs (which write runs, by machine)."""

    title: str
    keys: tuple[str, ...]  # what it owns in results.json; ``measure``'s figures go under the first
    measure: Callable[[Deployment], Any]
    lines: Callable[[Any], Iterable[str]]
    # Figures measured before deploying, which ``measure``'s own follow.
    before_deploy: Callable[[], list] | None = None


def _emulator_start_up() -> list[dict]:
    print("Measuring the emulator's start-up in a fresh interpreter...", flush=True)
    return [t.__dict__ for t in emulator_speed.start_up()]


# In the order they run.
MEASURED = {
    "oncall": Section("On-call schedules: the cost of resolving one per round", ("oncall",),
                      oncall.schedule_resolution_cost, oncall.cost_lines),
    "contact": Section("Reaching a phone: what a contact attempt costs the machine", ("contact",),
                       contact.contact_attempt_cost, contact.cost_lines),
    "emulator": Section(
        "The emulator", ("emulator", "deploy_seconds"),
        lambda deployment: [t.__dict__ for t in (*emulator_speed.throughput(deployment),
                                                 *emulator_speed.demo_scenarios(deployment))],
        lambda timings: (f"  {timing['what']}: {report.timing_value(timing)}" for timing in timings),
        before_deploy=_emulator_start_up,
    ),
    "lambda": Section("Lambda assets", ("functions",), lambda deployment: [a.__dict__ for a in functions.assets(deployment)],
                      lambda assets: (f"  {asset}" for asset in assets)),
    "dispatch": Section("Scheduled dispatch at scale", ("dispatch",), dispatch.dispatch_at_scale, report.dispatch_table),
    "storm": Section("An alarm storm through one webhook, at Slack's pace", ("storm",), storm.alarm_storm,
                     report.storm_table),
    "click": Section("A Slack click: the endpoint's work before its answer", ("click",), storm.click_answer,
                     report.click_table),
    # Last: it changes the deployed map-retry machine and function.
    "hotswap": Section("Hot-swap (cdk deploy --hotswap)", ("hotswap",), hotswap.hotswaps, report.hotswap_table),
}
SECTIONS = (*RUN_SECTIONS, *MEASURED)


def _print_runs(runs: list[Run], machine: str) -> None:
    print("\n".join(report.runs_table([r.to_json() for r in runs], machine)), flush=True)


def merged(previous: dict, data: dict, sections: list[str]) -> dict:
    """The last results with the sections just run replaced: a partial run keeps every other figure."""
    result = {**previous, "runs": [r for r in previous["runs"] if r["machine"] not in sections] + data["runs"]}
    for section in sections:
        result.update({key: data[key] for key in (MEASURED[section].keys if section in MEASURED else ())})
    result["rerun"] = {**previous.get("rerun", {}), **{section: data["generated_at"] for section in sections}}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated subset of {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--out", type=Path, default=BENCH_DIR, help="where results.md and the charts go")
    args = parser.parse_args(argv)
    sections = [s for s in args.sections.split(",") if s]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}")

    started = time.monotonic()
    data: dict = {
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "failure_rate": scenarios.FAILURE_RATE,
        "runs": [],
        "emulator": [],
        "functions": [],
    }
    # List prices, not measured: printed first, so a run that fails later still shows them.
    print("## A page's cost per channel\n" + "\n".join(channels.cost_lines()) + "\n", flush=True)
    before_deploy = {name: section.before_deploy() for name, section in MEASURED.items()
                     if name in sections and section.before_deploy is not None}
    print("Deploying the app (cdk) and the seed designs into the local emulator...", flush=True)
    with deployed() as deployment:
        data["deploy_seconds"] = deployment.aws.deploy_seconds
        machines = deploy_bench(deployment)
        print(f"Deployed in {deployment.aws.deploy_seconds:.1f} s", flush=True)
        for machine, run_section in RUN_SECTIONS.items():
            if machine not in sections:
                continue
            print(f"\n## {report.MACHINE_TITLES[machine]}", flush=True)
            section_started = time.monotonic()
            runs = run_section(deployment, machines)
            _print_runs(runs, machine)
            print(f"({time.monotonic() - section_started:.0f} s)", flush=True)
            if wrong := scenarios.unexpected_endings(runs):
                print("\nOur design ended otherwise than expected; nothing written:\n" + "\n".join(wrong), file=sys.stderr)
                return 1
            data["runs"] += [r.to_json() for r in runs]
        for name, section in MEASURED.items():
            if name not in sections:
                continue
            print(f"\n## {section.title}", flush=True)
            try:
                figures = section.measure(deployment)
            except contact.ContactCostUnexpected as wrong:
                print(f"\nOur design ended otherwise than expected; nothing written:\n{wrong}", file=sys.stderr)
                return 1
            data[section.keys[0]] = [*before_deploy[name], *figures] if name in before_deploy else figures
            print("\n".join(section.lines(data[section.keys[0]])), flush=True)
    data["total_seconds"] = time.monotonic() - started

    args.out.mkdir(parents=True, exist_ok=True)
    results_json = args.out / "results.json"
    if set(sections) != set(SECTIONS) and results_json.exists():
        data = merged(json.loads(results_json.read_text()), data, sections)
    results_json.write_text(json.dumps(data, indent=1) + "\n")
    results_md = report.results_markdown(data)
    (args.out / "results.md").write_text(results_md)
    report.charts(data, args.out, machines=[m for m in RUN_SECTIONS if m in sections])
    if args.out.resolve() == BENCH_DIR:
        docs_pages.update()
    print(f"\nWrote {args.out / 'results.md'} and the charts in {time.monotonic() - started:.0f} s.")
    print("\n" + report.read_headline(results_md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
