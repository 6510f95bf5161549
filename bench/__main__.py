"""`python -m bench`: deploy the app and the seed designs, run every scenario, write results and charts."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from bench import dispatch, docs_pages, emulator_speed, functions, hotswap, oncall, report, scenarios, storm
from bench.deploy import deploy_bench
from bench.measure import Run
from emulator.session import deployed

BENCH_DIR = Path(__file__).resolve().parent
SECTIONS = ("alert", "oncall", "poller", "map-retry", "emulator", "lambda", "dispatch", "storm", "click", "hotswap")
RUN_SECTIONS = {"alert": scenarios.alert_runs, "poller": scenarios.poller_runs, "map-retry": scenarios.map_runs}
# What the other sections write into results.json (the run sections write runs, by machine).
SECTION_KEYS = {"emulator": ("emulator", "deploy_seconds"), "lambda": ("functions",), "dispatch": ("dispatch",),
                "oncall": ("oncall",), "storm": ("storm",), "click": ("click",), "hotswap": ("hotswap",)}


def _print_runs(runs: list[Run], machine: str) -> None:
    print("\n".join(report.runs_table([r.to_json() for r in runs], machine)), flush=True)


def merged(previous: dict, data: dict, sections: list[str]) -> dict:
    """The last results with the sections just run replaced: a partial run keeps every other figure."""
    result = {**previous, "runs": [r for r in previous["runs"] if r["machine"] not in sections] + data["runs"]}
    for section in sections:
        result.update({key: data[key] for key in SECTION_KEYS.get(section, ())})
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
    if "emulator" in sections:
        print("Measuring the emulator's start-up in a fresh interpreter...", flush=True)
        data["emulator"] += [t.__dict__ for t in emulator_speed.start_up()]
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
            data["runs"] += [r.to_json() for r in runs]
        if "oncall" in sections:
            print("\n## On-call schedules: the cost of resolving one per round", flush=True)
            data["oncall"] = oncall.schedule_resolution_cost(deployment)
            print("\n".join(oncall.cost_lines(data["oncall"])), flush=True)
        if "emulator" in sections:
            print("\n## The emulator", flush=True)
            data["emulator"] += [t.__dict__ for t in emulator_speed.throughput(deployment)]
            data["emulator"] += [t.__dict__ for t in emulator_speed.demo_scenarios(deployment)]
            for timing in data["emulator"]:
                print(f"  {timing['what']}: {report.timing_value(timing)}", flush=True)
        if "lambda" in sections:
            print("\n## Lambda assets", flush=True)
            data["functions"] = [a.__dict__ for a in functions.assets(deployment)]
            for asset in data["functions"]:
                print(f"  {asset}", flush=True)
        if "dispatch" in sections:
            print("\n## Scheduled dispatch at scale", flush=True)
            data["dispatch"] = dispatch.dispatch_at_scale(deployment)
            print("\n".join(report.dispatch_table(data["dispatch"])), flush=True)
        if "storm" in sections:
            print("\n## An alarm storm through one webhook, at Slack's pace", flush=True)
            data["storm"] = storm.alarm_storm(deployment)
            print("\n".join(report.storm_table(data["storm"])), flush=True)
        if "click" in sections:
            print("\n## A Slack click: the endpoint's work before its answer", flush=True)
            data["click"] = storm.click_answer(deployment)
            print("\n".join(report.click_table(data["click"])), flush=True)
        if "hotswap" in sections:  # last: it changes the deployed map-retry machine and function
            print("\n## Hot-swap (cdk deploy --hotswap)", flush=True)
            data["hotswap"] = hotswap.hotswaps(deployment)
            print("\n".join(report.hotswap_table(data["hotswap"])), flush=True)
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
