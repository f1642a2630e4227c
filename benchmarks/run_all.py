"""Run every benchmark and write the results into benchmarks/README.md.

Run from the repository root:  python -m benchmarks.run_all

The README's text between the two ``results`` markers is replaced; the rest is left as written.
Pass ``--no-write`` to only print. Timings need a quiet machine: the script first waits (up to
5 minutes) until other processes use under 15% of the cores; a benchmark during which other
processes used more is run again (``--attempts``, default 3), and the quietest run is kept. How
busy the machine was is written next to each table.
"""

import argparse
import datetime
import pathlib

from benchmarks import blas, chain, fan_out, harness, mlp, power, record_scale

README = pathlib.Path(__file__).with_name("README.md")
START = "<!-- results:start (written by python -m benchmarks.run_all) -->"
END = "<!-- results:end -->"
QUIET = 0.15  # share of the cores other processes may use during a measurement


def _busy(fraction):
    return "unknown" if fraction is None else f"{fraction:.0%}"


def results_section(results, busy_before):
    today = datetime.date.today().isoformat()
    lines = [
        START,
        "",
        f"Measured on {today} with `python -m benchmarks.run_all`.",
        "",
        "Machine and settings:",
        "",
        *(f"- {line}" for line in harness.machine_lines()),
        f"- other processes' CPU use just before the run: {_busy(busy_before)} of the cores",
        "",
    ]
    for result in results:
        lines += [
            f"### {result['title']}",
            "",
            "Forward + backward per engine, in turns; ratios are of the minimum of "
            f"{harness.REPEATS} samples (the median shows the spread).",
            "",
            result["table"],
            "",
            result["verdict"],
            "",
            harness.load_note(result["others_load"]),
            "",
        ]
    lines.append(END)
    return "\n".join(lines)


def quietest(benchmark, attempts):
    """Run ``benchmark()`` until other processes stayed quiet during it (at most ``attempts``
    times), and keep the run they disturbed least."""
    best = None
    for attempt in range(attempts):
        if attempt:
            harness.wait_until_quiet()
        result = benchmark()
        load = result["others_load"]
        if best is None or (load is not None and load < best["others_load"]):
            best = result
        if load is None or load <= QUIET or attempt == attempts - 1:
            break
        print(f"{result['title']}: {harness.load_note(load)}; running it again")
    return best


def write_readme(section):
    text = README.read_text() if README.exists() else f"# Benchmarks\n\n{START}\n{END}\n"
    if START not in text or END not in text:
        text = text.rstrip() + f"\n\n## Results\n\n{START}\n{END}\n"
    before = text[: text.index(START)]
    after = text[text.index(END) + len(END) :]
    README.write_text(before + section + after)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only, leave README.md")
    parser.add_argument("--attempts", type=int, default=3, help="runs of a disturbed benchmark")
    args = parser.parse_args()

    busy_before = harness.wait_until_quiet()
    print(harness.PINNING)
    benchmarks = [chain.run, fan_out.run, lambda: mlp.run("addmm")]
    if mlp.has_style("nn"):
        benchmarks.append(lambda: mlp.run("nn"))
    benchmarks.append(power.run)
    benchmarks.append(blas.run)
    benchmarks.append(record_scale.run)
    results = [quietest(benchmark, args.attempts) for benchmark in benchmarks]

    section = results_section(results, busy_before)
    print(section)
    if not args.no_write:
        write_readme(section)
        print(f"\nwritten to {README}")


if __name__ == "__main__":
    main()
