"""Self-contained HTML reports of runs and evaluations (one folder, no network): summary tables
with 95 % intervals, learning curves, reward terms, and a keyboard-driven trajectory viewer.

    write_report(run_dir, out_dir)            # vlagent report RUN_DIR [--out DIR]
    write_compare(run_a, run_b, out_dir)      # vlagent eval --compare RUN_A RUN_B

See docs/REPORTS.md.
"""

from vlagent.eval.report.compare import two_proportion_z
from vlagent.eval.report.load import Problem, RunData, load_run
from vlagent.eval.report.write import write_compare, write_report

__all__ = ["Problem", "RunData", "load_run", "two_proportion_z", "write_compare", "write_report"]
