"""The pictures' colours, defined once: each severity's, healthy links', the suspected component's."""

from __future__ import annotations

from ..enums import Severity

HEALTHY = "#a9afb7"
PCIE_HEALTHY = "#c9ced4"
SEVERITY_COLOURS: dict[Severity, str] = {
    Severity.WARNING: "#f2a900",
    Severity.FAILING: "#e8590c",
    Severity.DOWN: "#c2185b",
}
NOT_REPORTING = SEVERITY_COLOURS[Severity.DOWN]  # the links of a GPU gone from the bus: no reading is not healthy
NOT_READ = "#dde0e4"  # links the input holds no reading of (a paste cut short, of some GPUs): neither healthy nor not
SUSPECT = "#6f42c1"
INK = "#212529"  # text
MUTED = "#495057"  # secondary text
STEP_TIME = "#1864ab"  # a job's step time


def severity_colour(severity: Severity) -> str:
    """A severity's colour; healthy (ok) is grey."""
    return SEVERITY_COLOURS.get(severity, HEALTHY)
