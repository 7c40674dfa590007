"""`fabricbot rules`: the thresholds as a Prometheus rules file, recording each per-link rate and alerting on each
rule, so Prometheus (or Thanos, Mimir, VictoriaMetrics) pages on the same limits the bot diagnoses with."""

from __future__ import annotations

import argparse
from pathlib import Path

from diagnostics import InputError
from diagnostics.prometheus import labels_only, rules_yaml

from ..options import add_threshold_options, hours_type, thresholds_from


def cmd_rules(args: argparse.Namespace) -> int:
    if args.window <= 0:
        raise InputError("the window must be longer than zero", field="--window", value=str(args.window))
    text = rules_yaml(thresholds_from(args), window_hours=args.window, interval=args.interval,
                      config=labels_only(args.prometheus_config))
    if not args.out or args.out == "-":
        print(text, end="")
        return 0
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the rules file: {exc.strerror}", field="--out", value=args.out) from None
    print(f"wrote {args.out}: {text.count('- record:')} recording and {text.count('- alert:')} alerting rules "
          f"(check it with `promtool check rules {args.out}`)")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("rules", help="write a Prometheus rules file (recording and alerting rules) from the thresholds")
    p.add_argument("--out", metavar="FILE", help="where to write the rules (default: standard output)")
    p.add_argument("--window", type=hours_type, default=1.0, metavar="HOURS",
                   help="the rate window the rules record and alert on (default 1h, the sweep's)")
    p.add_argument("--interval", default="1m", metavar="DURATION", help="the rule groups' evaluation interval")
    p.add_argument("--prometheus-config", metavar="FILE",
                   help="the label map (default $FABRICBOT_PROMETHEUS_CONFIG or the bundled prometheus.toml)")
    add_threshold_options(p)
    p.set_defaults(func=cmd_rules)
