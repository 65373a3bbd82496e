"""loss.kl_collapse: a VAE's KL term that fell to almost nothing beside its reconstruction loss (posterior
collapse): the encoder's posterior matches the prior, the latent code carries almost no information, and
the decoder models the data alone.

A KL term near 0 is only a fault where it should hold information: a policy's KL to its reference (GRPO's
`kl`) starts at 0 and is meant to stay small, and a distillation's KL to its teacher falling to 0 is the
student learning. So the rule speaks only of a KL logged beside a reconstruction term (`recon`, `rec_loss`,
`nll`, `bce`, `mse`, a likelihood): the two halves of an ELBO. It is judged once the run's data has ended:
the KL's late level (the median of its last points) must be a small share of its early level (its largest
value among the first points) and of the reconstruction term's late level, so a KL that is small but
still a real part of the loss is left alone. It says warning at most: the name is the only evidence
that the term is a VAE's."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.quality_series import series_values
from trainwatch.rules.registry import register
from trainwatch.rules.stats import fmt
from trainwatch.store import Series

KL = re.compile(r"(?:^|[^a-z])(?:kld?|kl_?div\w*|kullback\w*)(?:[^a-z]|$)")
RECON = re.compile(r"recon\w*|reconstruct\w*|(?:^|[^a-z])(?:rec|nll|bce|mse|likelihood|log_?lik\w*)(?:[^a-z]|$)")


@dataclass(frozen=True)
class LossKlCollapseParams:
    """Parameters of loss.kl_collapse; their meaning and defaults are in presets/base.yaml."""

    min_points: int
    early_fraction: float
    late_fraction: float
    ratio: float
    share: float


def _split(name: str) -> str:
    low = name.lower()
    return "eval" if re.search(r"(?:^|[^a-z])(?:val|valid|validation|eval|test|dev)(?:[^a-z]|$)", low) else "train"


@register("loss.kl_collapse")
class LossKlCollapse(Rule):
    """A KL term beside a reconstruction term whose late level is a hair of its early one and of the
    reconstruction's: the posterior collapsed onto the prior."""

    id = "loss.kl_collapse"
    params = LossKlCollapseParams
    p: LossKlCollapseParams

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        mine = [s for s in ctx.store if s.source == source and s.finite_count]
        kls = [s for s in mine if KL.search(s.name.lower()) and not RECON.search(s.name.lower())]
        recons = [s for s in mine if RECON.search(s.name.lower()) and not KL.search(s.name.lower())]
        if not kls or not recons:
            return []
        found = [got for s in sorted(kls, key=lambda s: _split(s.name) != "train")
                 if (got := self._collapsed(s, recons)) is not None]
        if not found:
            return []
        name, early, early_step, late, n_late, recon, recon_late, last_step = found[0]
        others = [f[0] for f in found[1:]]
        msg = (f"{name} fell from {fmt(early)} (step {early_step}) to {fmt(late)} (median of its last {n_late} "
               f"points, to step {last_step}): {late / early:.2%} of its early level and {late / recon_late:.2%} of "
               f"{recon} ({fmt(recon_late)}, the same kind of median): the KL term has collapsed to about 0, so "
               f"the latent code carries almost no information and the decoder models the data alone "
               f"(posterior collapse)")
        if others:
            msg += f" (also collapsed: {', '.join(others[:4])})"
        return [Finding(message=msg, step=early_step, began_step=early_step, subject=name,
                        evidence={"value": early, "step": early_step, "late": late,
                                  "late_stat": f"median of the last {n_late} points", "recon": recon,
                                  "recon_late": recon_late, "metrics": [f[0] for f in found],
                                  "detected_step": last_step, "last_step": last_step})]

    def _collapsed(self, kl: Series, recons: list[Series]
                   ) -> tuple[str, float, int, float, int, str, float, int] | None:
        p = self.p
        steps, values = series_values(kl)
        n = len(values)
        if n < p.min_points:
            return None
        k_early = max(2, int(n * p.early_fraction))
        k_late = max(3, int(n * p.late_fraction))
        head = values[:k_early]
        i = int(np.argmax(head))
        early = float(head[i])
        late = float(np.median(values[-k_late:]))
        if early <= 0 or late < 0 or late > p.ratio * early:
            return None
        split = _split(kl.name)
        same = [r for r in recons if _split(r.name) == split] or recons
        _, r_values = series_values(same[0])
        if not len(r_values):
            return None
        recon_late = float(np.median(r_values[-max(3, int(len(r_values) * p.late_fraction)):]))
        if recon_late <= 0 or late > p.share * recon_late:
            return None  # small, but still a real part of the loss
        return kl.name, early, int(steps[i]), late, k_late, same[0].name, recon_late, int(steps[-1])
