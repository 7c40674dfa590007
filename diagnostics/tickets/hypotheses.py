"""Topology inspection: ranked explanations of a node's failures, held against the deterministic localization.

Single link vs shared NVSwitch vs GPU module vs PCIe riser vs fabric software. The rules rank the candidates by how
much of the failure each explains; the model may rank them differently, and where it disagrees with the analysis
both views are shown and the analysis's facts stay.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from ..enums import ComponentKind
from ..model import Diagnosis
from ..topology import NodeGraph
from .build import rule_hypotheses, select
from .candidates import Candidate
from .reasoning import ModelHypothesis
from .ticket import Hypothesis


class InspectionAnswer(BaseModel):
    """The model's structured answer in inspection mode."""

    hypotheses: list[ModelHypothesis] = Field(min_length=1, description="Most likely first.")
    conclusion: str = Field(description="One or two sentences: which explanation the evidence favours and why.")


class Inspection(BaseModel):
    """Ranked hypotheses for one node, and whether the top one agrees with the analysis's localization."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    hypotheses: list[Hypothesis]
    analysis_component: str
    analysis_kind: ComponentKind
    agrees: bool
    disagreement: str | None = None
    conclusion: str
    drafted_by: str
    notes: list[str] = Field(default_factory=list)


def ranked(answers: Sequence[ModelHypothesis], candidates: Sequence[Candidate],
           target: Candidate) -> list[Hypothesis]:
    by_id = {c.id: c for c in candidates}
    out = []
    for i, h in enumerate(answers):
        chosen = by_id.get(h.candidate_id) if h.candidate_id else None
        agrees = h.candidate_id == target.id if chosen else h.kind is target.kind
        out.append(Hypothesis(rank=i + 1, kind=h.kind, candidate_id=h.candidate_id,
                              component=chosen.component if chosen else h.kind.value, evidence=list(h.evidence),
                              agrees_with_analysis=agrees))
    return out


def compare(hypotheses: Sequence[Hypothesis], target: Candidate) -> tuple[bool, str | None]:
    """Does the top hypothesis agree with the analysis? If not, say both, and that the facts stay the analysis's."""
    if not hypotheses or hypotheses[0].agrees_with_analysis:
        return True, None
    top = hypotheses[0]
    text = (f"The top hypothesis is {top.component} ({top.kind.value}); the analysis isolated {target.component} "
            f"({target.kind.value}). The ticket keeps the analysis's facts.")
    if top.kind is ComponentKind.FABRIC_SOFTWARE:
        text += " Rule out the fabric software before replacing hardware."
    return False, text


def rules_inspection(diagnosis: Diagnosis, graph: NodeGraph | None = None, *,
                     notes: Sequence[str] = ()) -> Inspection:
    target, candidates = select(diagnosis, None, graph)
    hyps = rule_hypotheses(candidates)
    top = hyps[0] if hyps else None
    conclusion = (f"{top.component} explains the most of the unhealthy links ({'; '.join(top.evidence)})."
                  if top else "nothing unhealthy")
    return Inspection(node_id=diagnosis.node_id, hypotheses=hyps, analysis_component=target.component,
                      analysis_kind=target.kind, agrees=True, conclusion=conclusion, drafted_by="rules",
                      notes=list(notes))


def inspection_markdown(i: Inspection) -> str:
    lines = [f"# Topology inspection: {i.node_id}", "", f"drafted by {i.drafted_by}; the analysis isolated "
             f"{i.analysis_component} ({i.analysis_kind.value})", "", i.conclusion, ""]
    for h in i.hypotheses:
        mark = " (the analysis's choice)" if h.agrees_with_analysis else ""
        lines.append(f"{h.rank}. {h.component} [{h.kind.value}]{mark}: {'; '.join(h.evidence) or '-'}")
    if i.disagreement:
        lines += ["", f"**Disagrees with the analysis:** {i.disagreement}"]
    lines += [f"- note: {n}" for n in i.notes]
    return "\n".join(lines) + "\n"
