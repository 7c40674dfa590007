"""`fabricbot rules`: the thresholds as a Prometheus rules file, recording each per-link rate and alerting on each
rule, so Prometheus (or Thanos, Mimir, VictoriaMetrics) pages on the same limits the bot diagnoses with."""

from __future__ import annotations

import argparse
from pathlib import Path

from diagnostics import InputError
from diagnostics.prometheus import labels_only, rules_yaml, window_text

from ..options import add_threshold_options, hours_type, parse_duration, thresholds_from
from . import SUMMARIES


def _interval(text: str, window_hours: float) -> str:
    """The groups' evaluation interval as a Prometheus duration (`1m`, `90s`), read as `--window` is; refused when it
    is no duration, under a second, not whole seconds, or longer than the window it evaluates."""
    try:
        seconds = parse_duration(text).total_seconds()
    except ValueError:
        raise InputError("expected a duration such as 30s, 1m or 5m", field="--interval", value=text) from None
    if seconds < 1 or seconds != int(seconds):
        raise InputError("the evaluation interval must be a whole number of seconds, at least 1s",
                         field="--interval", value=text)
    if seconds > round(window_hours * 3600):
        raise InputError(f"the evaluation interval must be no longer than the window ({window_text(window_hours)})",
                         field="--interval", value=text)
    return window_text(seconds / 3600)


def cmd_rules(args: argparse.Namespace) -> int:
    window = args.window  # as `hours_type` took it: one minute or more
    interval = _interval(args.interval, window)
    text = rules_yaml(thresholds_from(args), window_hours=window, interval=interval,
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
    p = sub.add_parser("rules", help=SUMMARIES["rules"])
    p.add_argument("--out", metavar="FILE", help="where to write the rules (default: standard output)")
    p.add_argument("--window", type=hours_type, default=1.0, metavar="HOURS",
                   help="the rate window the rules record and alert on (default 1h, the sweep's)")
    p.add_argument("--interval", default="1m", metavar="DURATION",
                   help="the rule groups' evaluation interval (default 1m; at most the window)")
    p.add_argument("--prometheus-config", metavar="FILE",
                   help="the label map (default $FABRICBOT_PROMETHEUS_CONFIG or the bundled prometheus.toml)")
    add_threshold_options(p)
    p.set_defaults(func=cmd_rules)
